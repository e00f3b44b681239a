/**
 * Client authentication against a real gateway process: API keys (hashed in config), JWT bearer
 * tokens (static JWK, JWKS URL), the refusals (401/403 with WWW-Authenticate and -32012), the
 * ops-path rules, and the audit line.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rpc, rpcRaw, methodUrl } from '../support/http-client.js';
import type { GatewayHandle } from '../support/processes.js';
import { suiteProcesses } from '../support/suite.js';
import { until } from '../observability/support.js';
import { AUDIENCE, ISSUER, auditLines, keyHash, rsaSigner, serveJwks, type Signer } from './support.js';

const procs = suiteProcesses();
const ALICE = 'alice-key-3f9a1c0e5b7d2468';
const OPS = 'ops-key-8e1d4b6a0c2f3579';
const MARKER = 'quokkaquery';

let gw: GatewayHandle;
let signer: Signer;
let stranger: Signer;

beforeAll(async () => {
  signer = await rsaSigner('k1');
  stranger = await rsaSigner('k1'); // same kid, different key: a forgery
  const web = await procs.engine(['--id', 'web']);
  const docs = await procs.engine(['--id', 'docs']);
  gw = await procs.gateway(
    {
      engines: [
        { id: 'web', transport: 'http', url: web.url },
        { id: 'docs', transport: 'http', url: docs.url },
      ],
      gateway: {
        logLevel: 'info',
        auth: {
          enabled: true,
          apiKeys: [
            { id: 'alice', hash: keyHash(ALICE), tenant: 'team-a', scopes: ['rcp:read'] },
            { id: 'ops', hash: '${OPS_KEY_HASH}', scopes: ['rcp:metrics'] },
          ],
          jwt: { keys: [signer.publicJwk], issuer: ISSUER, audience: AUDIENCE, clockSkewSec: 30, algorithms: ['RS256'] },
        },
        tenants: { 'team-a': { engines: ['web'] }, 'team-b': {} },
      },
    },
    { env: { ...process.env, OPS_KEY_HASH: keyHash(OPS) } },
  );
});

const bearer = (token: string): Record<string, string> => ({ authorization: `Bearer ${token}` });

describe('without credentials', () => {
  it('answers 401 with WWW-Authenticate and -32012 before initialize, for single calls and batches', async () => {
    const init = await rpc(gw.url, 'initialize', { protocolVersion: 1, client: { name: 't' }, capabilities: {} });
    expect(init.status).toBe(401);
    expect(init.headers['www-authenticate']).toBe('Bearer realm="rcp-gateway"');
    expect(init.body).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32012, data: { retryable: false } } });
    const batch = await rpcRaw(gw.url, JSON.stringify([{ jsonrpc: '2.0', id: 1, method: 'ping' }]));
    expect(batch.status).toBe(401);
    expect(JSON.parse(batch.text)).toMatchObject({ error: { code: -32012 } });
  });

  it('refuses an unknown API key and a malformed Authorization header as invalid', async () => {
    const wrong = await rpc(gw.url, 'ping', {}, { headers: bearer('not-a-key') });
    expect(wrong.status).toBe(401);
    expect(wrong.headers['www-authenticate']).toContain('error="invalid_token"');
    const viaHeader = await rpc(gw.url, 'ping', {}, { headers: { 'x-api-key': 'not-a-key' } });
    expect(viaHeader.status).toBe(401);
    const basic = await rpc(gw.url, 'ping', {}, { headers: { authorization: 'Basic YWxpY2U6cHc=' } });
    expect(basic.status).toBe(401);
    expect(basic.headers['www-authenticate']).toContain('error="invalid_request"');
  });
});

describe('API keys', () => {
  it('accept the key whose SHA-256 is configured, from Authorization or X-API-Key, also through ${ENV}', async () => {
    const viaBearer = await rpc(gw.url, 'retrieve', { query: 'wing', k: 2 }, { headers: bearer(ALICE) });
    expect(viaBearer.status).toBe(200);
    expect(viaBearer.result).toBeDefined();
    const viaHeader = await rpc(gw.url, 'ping', {}, { headers: { 'x-api-key': ALICE } });
    expect(viaHeader.result).toEqual({});
    // The ops key's hash came from the environment (${OPS_KEY_HASH}).
    const metrics = await fetch(gw.url.replace(/\/rcp$/, '/metrics'), { headers: bearer(OPS) });
    expect(metrics.status).toBe(200);
  });
});

describe('JWT bearer tokens (static key)', () => {
  it('accept a valid token and map sub, tenant and scope to the principal', async () => {
    const token = await signer.token({ sub: 'dave', tenant: 'team-a', scope: 'rcp:read' });
    const reply = await rpc<{ _meta: { engines: string[] } }>(gw.url, 'retrieve', { query: 'wing', k: 2 }, { headers: bearer(token) });
    expect(reply.status).toBe(200);
    expect(reply.result!._meta.engines).toEqual(['web']); // team-a reaches web only
  });

  it('refuse expired, wrong-audience, wrong-issuer and forged tokens with 401 invalid_token', async () => {
    const cases: Array<[string, string]> = [
      [await signer.token({ sub: 'dave', scope: 'rcp:read' }, { expiresInSec: -120 }), 'token expired'],
      [await signer.token({ sub: 'dave', scope: 'rcp:read' }, { audience: 'someone-else' }), 'aud'],
      [await signer.token({ sub: 'dave', scope: 'rcp:read' }, { issuer: 'https://evil.test' }), 'iss'],
      [await stranger.token({ sub: 'dave', scope: 'rcp:read' }), 'signature'],
    ];
    for (const [token, why] of cases) {
      const reply = await rpc(gw.url, 'ping', {}, { headers: bearer(token) });
      expect(reply.status, why).toBe(401);
      expect(reply.headers['www-authenticate'], why).toContain('error="invalid_token"');
      expect(reply.headers['www-authenticate'], why).toContain(why);
      expect(reply.body, why).toMatchObject({ error: { code: -32012 } });
    }
  });

  it('allow the configured clock skew past expiry, and refuse a token for an unconfigured tenant with 403', async () => {
    const justExpired = await signer.token({ sub: 'dave', tenant: 'team-a', scope: 'rcp:read' }, { expiresInSec: -10 });
    expect((await rpc(gw.url, 'ping', {}, { headers: bearer(justExpired) })).status).toBe(200);
    const foreign = await signer.token({ sub: 'eve', tenant: 'team-z', scope: 'rcp:read' });
    const refused = await rpc(gw.url, 'ping', {}, { headers: bearer(foreign) });
    expect(refused.status).toBe(403);
    expect(refused.body).toMatchObject({ error: { code: -32012 } });
  });
});

describe('ops paths', () => {
  const base = (): string => gw.url.replace(/\/rcp$/, '');
  it('keep /healthz and /readyz open, and require rcp:metrics for /metrics', async () => {
    expect((await fetch(`${base()}/healthz`)).status).toBe(200);
    expect([200, 503]).toContain((await fetch(`${base()}/readyz`)).status);
    const anonymous = await fetch(`${base()}/metrics`);
    expect(anonymous.status).toBe(401);
    const reader = await fetch(`${base()}/metrics`, { headers: bearer(ALICE) });
    expect(reader.status).toBe(403);
    expect(reader.headers.get('www-authenticate')).toContain('error="insufficient_scope"');
    expect(reader.headers.get('www-authenticate')).toContain('scope="rcp:metrics"');
  });

  it('keep the MCP endpoint to unrestricted principals when auth is on', async () => {
    const mcp = await fetch(`${base()}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...bearer(ALICE) },
      body: '{}',
    });
    expect(mcp.status).toBe(403);
    expect((await fetch(`${base()}/mcp`, { method: 'POST', body: '{}' })).status).toBe(401);
  });
});

describe('audit log', () => {
  it('writes one JSON line per request: who, method, engines, outcome, and no query text', async () => {
    await rpc(gw.url, 'retrieve', { query: `flutter ${MARKER}`, k: 2 }, { id: 'audit-1', headers: bearer(ALICE) });
    await rpc(gw.url, 'index/add', { documents: [{ id: 'x', text: 'y' }] }, { id: 'audit-2', headers: bearer(ALICE) });
    await rpcRaw(
      methodUrl(gw.url, 'retrieve'),
      JSON.stringify({ jsonrpc: '2.0', id: 'audit-3', method: 'retrieve', params: { query: MARKER } }),
    );
    const lines = await until('the audit lines', () => {
      const found = auditLines(gw.stderr());
      const ok = found.find((l) => l.audit.id === 'audit-1');
      const denied = found.find((l) => l.audit.id === 'audit-2');
      const refused = found.find((l) => l.audit.status === 401 && l.audit.method === 'retrieve');
      return ok && denied && refused ? { ok, denied, refused } : undefined;
    });
    expect(lines.ok.audit).toMatchObject({
      principal: 'alice',
      tenant: 'team-a',
      via: 'api-key',
      method: 'retrieve',
      engines: ['web'],
      code: 0,
      outcome: 'ok',
    });
    expect(lines.denied.audit).toMatchObject({ principal: 'alice', method: 'index/add', engines: [], code: -32012, outcome: 'denied' });
    expect(lines.refused.audit).toMatchObject({ principal: null, code: -32012, outcome: 'denied', status: 401 });
    expect(gw.stderr()).not.toContain(MARKER);
    expect(gw.stderr()).not.toContain(ALICE);
  });
});

describe('JWT bearer tokens (JWKS URL)', () => {
  let jwks: Awaited<ReturnType<typeof serveJwks>>;
  let jwksGateway: GatewayHandle;
  beforeAll(async () => {
    jwks = await serveJwks([signer.publicJwk]);
    const web = await procs.engine(['--id', 'web']);
    jwksGateway = await procs.gateway({
      engines: [{ id: 'web', transport: 'http', url: web.url }],
      gateway: { logLevel: 'warn', auth: { enabled: true, jwt: { jwksUrl: jwks.url, issuer: ISSUER, audience: AUDIENCE } } },
    });
  });
  afterAll(() => jwks.close());

  it('verify tokens against the fetched key set and refuse a key it does not hold', async () => {
    const token = await signer.token({ sub: 'frank', scope: 'rcp:read' });
    const ok = await rpc(jwksGateway.url, 'retrieve', { query: 'wing', k: 1 }, { headers: bearer(token) });
    expect(ok.status).toBe(200);
    expect(jwks.fetches()).toBeGreaterThanOrEqual(1);
    const forged = await rpc(jwksGateway.url, 'ping', {}, { headers: bearer(await stranger.token({ sub: 'frank' })) });
    expect(forged.status).toBe(401);
  });
});
