/**
 * Client authentication at the edge, per runtime: a config that turns `gateway.auth` on is
 * enforced exactly as the Node gateway enforces it (core/auth): no credentials or a wrong key is
 * 401 with `WWW-Authenticate` and -32012 before any engine is asked; the configured key gets
 * its answer, scoped to its tenant's engines; every request leaves an audit line.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rpc } from '../support/http-client.js';
import { readEvents, startHttpEngine, type EngineHandle } from '../support/processes.js';
import { keyHash } from '../auth/support.js';
import type { EdgeRuntime, EdgeServer } from './runtimes.js';

const KEY = 'edge-key-5d1c9e7a3b';
const SCOPED = 'edge-scoped-key-8f2a6c';

export function edgeAuthSuite(runtime: EdgeRuntime): void {
  const title = `${runtime.name}: client authentication${runtime.unavailable ? ` (skipped: ${runtime.unavailable})` : ''}`;
  describe.skipIf(runtime.unavailable !== undefined)(title, () => {
    let web: EngineHandle;
    let docs: EngineHandle;
    let edge: EdgeServer;

    beforeAll(async () => {
      web = await startHttpEngine(['--id', 'web']);
      docs = await startHttpEngine(['--id', 'docs']);
      edge = await runtime.start({
        engines: [
          { id: 'web', transport: 'http', url: web.url },
          { id: 'docs', transport: 'http', url: docs.url },
        ],
        gateway: {
          cursorSecret: 'edge-auth-suite-cursor-secret',
          auth: {
            enabled: true,
            apiKeys: [
              { id: 'reader', hash: keyHash(KEY), scopes: ['rcp:read'] },
              { id: 'team-a-reader', hash: keyHash(SCOPED), tenant: 'team-a', scopes: ['rcp:read'] },
            ],
          },
          tenants: { 'team-a': { engines: ['docs'] } },
        },
      });
    });

    afterAll(async () => {
      await edge?.stop();
      await web?.stop();
      await docs?.stop();
    });

    it('refuses a request without credentials, or with a wrong key, before any engine is asked', async () => {
      const bare = await rpc(edge.url, 'retrieve', { query: 'edge-no-credentials', k: 2 });
      expect(bare.status).toBe(401);
      expect(bare.headers['www-authenticate']).toBe('Bearer realm="rcp-gateway"');
      expect(bare.body).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32012 } });
      const wrong = await rpc(
        edge.url,
        'retrieve',
        { query: 'edge-wrong-key', k: 2 },
        { headers: { authorization: 'Bearer not-the-key' } },
      );
      expect(wrong.status).toBe(401);
      expect(wrong.headers['www-authenticate']).toContain('error="invalid_token"');
      for (const engine of [web, docs]) {
        const asked = readEvents(engine.eventsFile).filter((e) => e.ev === 'request' && String(e.params?.query ?? '').startsWith('edge-'));
        expect(asked).toEqual([]);
      }
    });

    it('answers the configured key, from Authorization or X-API-Key', async () => {
      const viaBearer = await rpc<{ hits: unknown[]; _meta: { engines: string[] } }>(
        edge.url,
        'retrieve',
        { query: 'retrieval fusion ranking', k: 2 },
        { headers: { authorization: `Bearer ${KEY}` } },
      );
      expect(viaBearer.status).toBe(200);
      expect(viaBearer.result!.hits.length).toBeGreaterThan(0);
      expect(viaBearer.result!._meta.engines).toEqual(['docs', 'web']);
      const viaHeader = await rpc(edge.url, 'ping', {}, { headers: { 'x-api-key': KEY } });
      expect(viaHeader.result).toEqual({});
    });

    it("scopes a tenant's key to the tenant's engines", async () => {
      const scoped = await rpc<{ _meta: { engines: string[] } }>(
        edge.url,
        'retrieve',
        { query: 'retrieval fusion ranking', k: 2 },
        { headers: { authorization: `Bearer ${SCOPED}` } },
      );
      expect(scoped.status).toBe(200);
      expect(scoped.result!._meta.engines).toEqual(['docs']);
    });

    it('writes an audit line per request, naming the principal', async () => {
      await rpc(edge.url, 'ping', {}, { headers: { 'x-api-key': KEY } });
      const deadline = Date.now() + 5_000;
      let audited = false;
      while (!audited && Date.now() < deadline) {
        audited = edge.output().includes('"audit"') && edge.output().includes('"reader"');
        if (!audited) await new Promise((resolve) => setTimeout(resolve, 50));
      }
      expect(audited, edge.output().slice(-2_000)).toBe(true);
    });
  });
}
