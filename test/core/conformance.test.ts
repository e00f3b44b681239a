/**
 * An L0/L1 conformance probe (§14.1, §13, §11, §5) run against the gateway as a user starts it,
 * over stdio and over HTTP, with independent test engines behind it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rpc, rpcRaw, methodUrl } from '../support/http-client.js';
import { StdioClient } from '../support/stdio-client.js';
import {
  GATEWAY_CLI,
  REPO_ROOT,
  startGateway,
  startHttpEngine,
  stdioEngineCommand,
  tmpDir,
  writeConfig,
  type EngineHandle,
  type GatewayHandle,
} from '../support/processes.js';
import { emittedErrors, schemaCrossCheck, schemaCrossCheckBanner } from '../support/spec-validator.js';

let httpEngine: EngineHandle;
let gateway: GatewayHandle;
let configFile: string;

beforeAll(async () => {
  httpEngine = await startHttpEngine(['--id', 'web', '--reverse']);
  const config = {
    engines: [
      { id: 'docs', transport: 'stdio', command: stdioEngineCommand(['--id', 'docs']) },
      { id: 'web', transport: 'http', url: httpEngine.url },
    ],
    gateway: { maxK: 40 },
  };
  configFile = writeConfig(tmpDir(), config);
  gateway = await startGateway({ configFile });
});

afterAll(async () => {
  await gateway?.stop();
  await httpEngine?.stop();
  console.log(schemaCrossCheckBanner());
  expect(emittedErrors()).toEqual([]);
});

describe('stdio transport (§5.1, §13)', () => {
  let client: StdioClient;
  beforeAll(() => {
    client = new StdioClient([process.execPath, GATEWAY_CLI, 'stdio', '--config', configFile], { cwd: REPO_ROOT });
  });
  afterAll(async () => {
    expect(await client.close()).toBe(0);
    expect(client.violations).toEqual([]);
  });

  it('answers info and ping before initialize, echoing the nonce with its type', async () => {
    const info = await client.request('info', {});
    expect(info.result).toMatchObject({ protocolVersion: 1, server: { name: 'rcp-gateway' } });
    expect((await client.request('ping', { nonce: 'n-1' })).result).toEqual({ nonce: 'n-1' });
    expect((await client.request('ping', { nonce: 42 })).result).toEqual({ nonce: 42 });
  });

  it('rejects gated methods with -32001 before a successful initialize', async () => {
    const res = await client.request('retrieve', { query: 'retrieval', k: 3 });
    expect(res.error?.code).toBe(-32001);
  });

  it('a failed initialize (-32002) leaves the session locked', async () => {
    const failed = await client.request('initialize', { protocolVersion: 0 });
    expect(failed.error?.code).toBe(-32002);
    expect((await client.request('retrieve', { query: 'retrieval', k: 3 })).error?.code).toBe(-32001);
  });

  it('negotiates min(client, server) and rejects a second initialize with -32600', async () => {
    const ok = await client.request('initialize', { protocolVersion: 7, client: { name: 'probe' }, capabilities: {} });
    expect(ok.result).toMatchObject({ protocolVersion: 1 });
    const caps = (ok.result as { capabilities: Record<string, unknown> }).capabilities;
    expect(caps).toHaveProperty('retrieve');
    expect(caps).toHaveProperty('catalog', { engines: 2 });
    expect((ok.result as { _meta?: { conformance?: string } })._meta?.conformance).toMatch(/^L[012]$/);
    expect((await client.request('initialize', { protocolVersion: 1 })).error?.code).toBe(-32600);
    const info = await client.request('info', {});
    expect((info.result as { capabilities: unknown }).capabilities).toEqual(caps);
  });

  it('echoes ids unchanged, including 0 and ""', async () => {
    for (const id of [0, '', 'abc', 17, -3]) {
      const res = await client.request('ping', {}, id);
      expect(res.id).toStrictEqual(id);
    }
  });

  it('prefers -32004 for undefined methods over -32003 for unadvertised ones', async () => {
    expect((await client.request('frobnicate', {})).error?.code).toBe(-32004);
    expect((await client.request('embed', { inputs: ['x'] })).error?.code).toBe(-32003);
  });

  it('validates params with -32602 naming the field', async () => {
    const missing = await client.request('retrieve', { k: 3 });
    expect(missing.error).toMatchObject({ code: -32602, data: { field: 'query' } });
    const fractional = await client.request('retrieve', { query: 'x', k: 2.5 });
    expect(fractional.error).toMatchObject({ code: -32602, data: { field: 'k' } });
    const negative = await client.request('retrieve', { query: 'x', k: -1 });
    expect(negative.error).toMatchObject({ code: -32602, data: { field: 'k' } });
    const funnel = await client.request('retrieve', { query: 'x', k: 10, candidateK: 5 });
    expect(funnel.error).toMatchObject({ code: -32602, data: { field: 'candidateK' } });
  });

  it('clamps k to maxK instead of failing (§12), treating null as absent (§4.6)', async () => {
    const res = await client.request<{ hits: unknown[] }>('retrieve', {
      query: 'retrieval fusion ranking',
      k: 500,
      mode: null,
      extra: { unknown: true },
    });
    expect(res.error).toBeUndefined();
    expect(res.result!.hits.length).toBeLessThanOrEqual(40);
    expect(res.result!.hits.length).toBeGreaterThan(0);
  });

  it('never answers notifications and ignores cancels for unknown ids', async () => {
    client.notify('notifications/unknown', {});
    client.notify('notifications/cancel', { id: 'never-sent' });
    const after = await client.request('ping', { nonce: 'after' });
    expect(after.result).toEqual({ nonce: 'after' });
    const answered = client.messages.filter((m) => !('method' in m));
    expect(answered.every((m) => m.id !== null || 'error' in m)).toBe(true);
  });

  it('rejects notifications/cancel sent with an id (-32600)', async () => {
    expect((await client.request('notifications/cancel', { id: 1 })).error?.code).toBe(-32600);
  });

  it('handles batches per §11', async () => {
    const before = client.frames.length;
    client.writeRaw('[]\n');
    const empty = await client.waitFor(
      (f) => !Array.isArray(f) && (f as { error?: { code: number } }).error?.code === -32600 && (f as { id: unknown }).id === null,
    );
    expect(empty).toBeTruthy();
    client.writeRaw(
      `${JSON.stringify([{ jsonrpc: '2.0', id: 'b1', method: 'ping', params: { nonce: 1 } }, 5, { jsonrpc: '2.0', method: 'notifications/x' }])}\n`,
    );
    await client.waitFor((f) => f.id === 'b1');
    const batch = client.frames.slice(before).find((f) => Array.isArray(f)) as Array<{
      id: unknown;
      error?: { code: number };
      result?: unknown;
    }>;
    expect(batch).toHaveLength(2);
    expect(batch.find((r) => r.id === 'b1')?.result).toEqual({ nonce: 1 });
    expect(batch.find((r) => r.id === null)?.error?.code).toBe(-32600);
  });

  it('answers a parse error with -32700 and id null, then keeps serving', async () => {
    client.writeRaw('{not json\n');
    await client.waitFor((f) => (f as { error?: { code: number } }).error?.code === -32700);
    expect((await client.request('ping', {})).result).toEqual({});
  });

  it('federates retrieve over both engines', async () => {
    const res = await client.request<{ hits: Array<{ id: unknown; score: number; meta: { engine: string } }> }>('retrieve', {
      query: 'retrieval fusion ranking engine',
      k: 8,
    });
    const hits = res.result!.hits;
    expect(hits).toHaveLength(8);
    for (let i = 1; i < hits.length; i++) expect(hits[i - 1]!.score).toBeGreaterThanOrEqual(hits[i]!.score);
    expect(new Set(hits.map((h) => h.meta.engine)).size).toBe(2);
  });

  it('shutdown is answered, then EOF ends the process with code 0', async () => {
    expect((await client.request('shutdown', {})).result).toEqual({});
  });
});

describe('HTTP transport (§5.2)', () => {
  it('serves POST /rcp/<method> statelessly: gated methods work without initialize', async () => {
    const res = await rpc<{ hits: unknown[] }>(gateway.url, 'retrieve', { query: 'vector search', k: 3 });
    expect(res.status).toBe(200);
    expect(res.result?.hits.length).toBe(3);
  });

  it('answers initialize idempotently', async () => {
    const a = await rpc(gateway.url, 'initialize', { protocolVersion: 1 });
    const b = await rpc(gateway.url, 'initialize', { protocolVersion: 3 });
    expect(a.result).toMatchObject({ protocolVersion: 1 });
    expect(b.result).toMatchObject({ protocolVersion: 1 });
  });

  it('returns JSON-RPC errors with HTTP 200', async () => {
    const res = await rpc(gateway.url, 'frobnicate', {});
    expect(res.status).toBe(200);
    expect(res.error?.code).toBe(-32004);
  });

  it('rejects a path/body method mismatch with -32600', async () => {
    const raw = await rpcRaw(methodUrl(gateway.url, 'retrieve'), JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'ping', params: {} }), {
      'content-type': 'application/json',
    });
    expect(raw.status).toBe(200);
    expect(JSON.parse(raw.text)).toMatchObject({ id: 9, error: { code: -32600 } });
  });

  it('answers an unparseable body with 400 and a -32700 body', async () => {
    const raw = await rpcRaw(methodUrl(gateway.url, 'ping'), '{"jsonrpc":', { 'content-type': 'application/json' });
    expect(raw.status).toBe(400);
    expect(JSON.parse(raw.text)).toMatchObject({ id: null, error: { code: -32700 } });
  });

  it('answers notifications with 204 and no body', async () => {
    const raw = await rpcRaw(
      methodUrl(gateway.url, 'notifications/cancel'),
      JSON.stringify({ jsonrpc: '2.0', method: 'notifications/cancel', params: { id: 1 } }),
      { 'content-type': 'application/json' },
    );
    expect(raw.status).toBe(204);
    expect(raw.text).toBe('');
  });

  it('handles batches at the base path, including the empty and all-notification cases', async () => {
    const empty = await rpcRaw(gateway.url, '[]', { 'content-type': 'application/json' });
    expect(JSON.parse(empty.text)).toMatchObject({ id: null, error: { code: -32600 } });
    const notes = await rpcRaw(gateway.url, JSON.stringify([{ jsonrpc: '2.0', method: 'notifications/x' }]), {
      'content-type': 'application/json',
    });
    expect(notes.status).toBe(204);
    const mixed = await rpcRaw(
      gateway.url,
      JSON.stringify([
        { jsonrpc: '2.0', id: 1, method: 'ping', params: {} },
        { jsonrpc: '2.0', id: 2, method: 'retrieve', params: { query: 'graph index', k: 2 } },
      ]),
      { 'content-type': 'application/json' },
    );
    const answers = JSON.parse(mixed.text) as Array<{ id: number; result?: { hits?: unknown[] } }>;
    expect(answers.map((a) => a.id).sort()).toEqual([1, 2]);
    expect(answers.find((a) => a.id === 2)?.result?.hits).toHaveLength(2);
  });

  it('accepts the compact {method, params} envelope (§5.3)', async () => {
    const raw = await rpcRaw(methodUrl(gateway.url, 'ping'), JSON.stringify({ method: 'ping', params: { nonce: 'c' } }), {
      'content-type': 'application/json',
    });
    expect(raw.status).toBe(200);
    expect(JSON.parse(raw.text)).toEqual({ result: { nonce: 'c' } });
  });

  it('caps the body size with 413 and -32013', async () => {
    const big = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'retrieve', params: { query: 'x'.repeat(1_200_000), k: 1 } });
    const raw = await rpcRaw(methodUrl(gateway.url, 'retrieve'), big, { 'content-type': 'application/json' });
    expect(raw.status).toBe(413);
    expect(JSON.parse(raw.text)).toMatchObject({ error: { code: -32013 } });
  });

  it('returns 404 outside the RCP base path', async () => {
    const raw = await rpcRaw(gateway.url.replace(/\/rcp$/, '/elsewhere/ping'), '{}', { 'content-type': 'application/json' });
    expect(raw.status).toBe(404);
  });

  it('treats shutdown over HTTP as an acknowledgement, not a kill switch', async () => {
    expect((await rpc(gateway.url, 'shutdown', {})).result).toEqual({});
    expect((await rpc(gateway.url, 'ping', { nonce: 1 })).result).toEqual({ nonce: 1 });
  });

  it('lists engines in catalog/list with identity and capabilities, endpoints hidden', async () => {
    const res = await rpc<{
      engines: Array<{ id: string; server: { name: string }; capabilities: Record<string, unknown>; endpoint?: unknown }>;
    }>(gateway.url, 'catalog/list', {});
    const engines = res.result!.engines;
    expect(engines.map((e) => e.id).sort()).toEqual(['docs', 'web']);
    for (const engine of engines) {
      expect(engine.server.name).toBe(`test-engine-${engine.id}`);
      expect(engine.capabilities).toHaveProperty('retrieve');
      expect(engine.endpoint).toBeUndefined();
    }
  });
});

schemaCrossCheck();
