/**
 * Proves the independent RCP test engine (test-engine.mjs) behaves per spec
 * over both transports, so gateway tests can trust what it does and records.
 */
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { rpc, rpcRaw, rpcSse, methodUrl } from '../support/http-client.js';
import type { RpcReply } from '../support/http-client.js';
import { StdioClient } from '../support/stdio-client.js';
import type { StdioClientOptions } from '../support/stdio-client.js';
import { readEvents, startHttpEngine, stdioEngineCommand, tmpDir, waitForEvent, writeControl } from '../support/processes.js';
import type { EngineHandle } from '../support/processes.js';
import { emittedCount, emittedErrors, schemaAvailable, schemaCrossCheckBanner, validateFrame } from '../support/spec-validator.js';

interface Hit {
  id: unknown;
  score: unknown;
  text?: string;
  meta?: Record<string, unknown>;
}
const hitsOf = (r: { result?: Record<string, unknown> }): Hit[] => (r.result?.hits ?? []) as Hit[];
const INIT = { protocolVersion: 1, client: { name: 'engine-test', version: '0' }, capabilities: {} };

const clients: StdioClient[] = [];
const engines: EngineHandle[] = [];
function stdioEngine(args: string[], opts: StdioClientOptions = {}): StdioClient {
  const c = new StdioClient(stdioEngineCommand(args), opts);
  clients.push(c);
  return c;
}
async function httpEngine(args: string[] = []): Promise<EngineHandle> {
  const e = await startHttpEngine(args);
  engines.push(e);
  return e;
}
afterAll(async () => {
  for (const c of clients) c.kill();
  await Promise.all(engines.map((e) => e.stop()));
});

describe('test engine over stdio', () => {
  it('follows the lifecycle: ping/info before initialize, -32001 otherwise, version negotiation', async () => {
    const c = stdioEngine(['--id', 'life']);
    expect((await c.request('ping', { nonce: 'n-1' })).result).toEqual({ nonce: 'n-1' });
    expect((await c.request('ping', { nonce: 42 })).result).toEqual({ nonce: 42 });
    expect((await c.request('retrieve', { query: 'graph', k: 3 })).error?.code).toBe(-32001);
    const info = await c.request('info', {});
    expect(info.result?.server).toMatchObject({ name: 'test-engine-life' });

    const init = await c.request('initialize', { ...INIT, protocolVersion: 7 });
    expect(init.result).toMatchObject({
      protocolVersion: 1,
      capabilities: { retrieve: { maxK: 50, modes: ['sparse'], scoreFloor: 0 }, streaming: {} },
    });
    expect((await c.request('initialize', INIT)).error?.code).toBe(-32600); // §13: no re-negotiation
    expect((await c.request('bogus/method', {})).error?.code).toBe(-32004);
    expect((await c.request('embed', { inputs: ['x'] })).error?.code).toBe(-32003);
    const mode = await c.request('retrieve', { query: 'graph', k: 2, mode: 'dense' });
    expect(mode.error).toMatchObject({ code: -32005, data: { option: 'dense' } });
    expect(hitsOf(await c.request('retrieve', { query: 'graph', k: 2, mode: 'dense', strict: false }))).toHaveLength(2);

    const r = await c.request('retrieve', { query: 'graph index query', k: 5 }, 'str-id');
    expect(r.id).toBe('str-id');
    const hits = hitsOf(r);
    expect(hits).toHaveLength(5);
    const scores = hits.map((h) => h.score as number);
    expect([...scores].sort((a, b) => b - a)).toEqual(scores);
    expect(hits[0]).toMatchObject({ meta: { src: 'life' } });
    expect(typeof hits[0]?.id).toBe('string');
    expect(hitsOf(await c.request('retrieve', { query: 'graph index query', k: 500 })).length).toBeLessThanOrEqual(50);
    expect(await c.close()).toBe(0);
    expect(c.violations).toEqual([]);
  });

  it('tolerates blank lines and split reads, and answers a batch', async () => {
    const c = stdioEngine([]);
    await c.request('initialize', INIT);
    const line = JSON.stringify({ jsonrpc: '2.0', id: 'split', method: 'ping', params: { nonce: 'ü-ß' } });
    const waiting = c.waitFor((f) => f.id === 'split');
    c.writeRaw('\n\n' + line.slice(0, 17));
    c.writeRaw(line.slice(17) + '\r\n\n');
    expect((await waiting).result).toEqual({ nonce: 'ü-ß' });
    c.send([
      { jsonrpc: '2.0', id: 'b1', method: 'ping', params: {} },
      { jsonrpc: '2.0', method: 'notifications/whatever', params: {} },
      { jsonrpc: '2.0', id: 'b2', method: 'retrieve', params: { query: 'cache', k: 1 } },
    ]);
    const batch = await c.waitFor((f) => f.id === 'b2');
    expect(hitsOf(batch as { result?: Record<string, unknown> })).toHaveLength(1);
    expect(c.frames.some((f) => Array.isArray(f) && f.length === 2)).toBe(true);
    expect(await c.close()).toBe(0);
  });

  it('streams progress frames echoing the token and logs when the client opted in', async () => {
    const c = stdioEngine(['--id', 'prog', '--caps', JSON.stringify({ retrieve: { maxK: 10 }, streaming: {}, log: {} })]);
    await c.request('initialize', { ...INIT, capabilities: { log: {} } });
    const r = await c.request('retrieve', { query: 'vector search', k: 3, _meta: { progressToken: 'tok-1' } });
    expect(hitsOf(r)).toHaveLength(3);
    const progress = c.progressFor('tok-1');
    expect(progress.map((p) => p.progress)).toEqual([0.33, 0.66, 1]);
    expect(progress.every((p) => p.stage === 'recall')).toBe(true);
    // Progress precedes the final response on the wire (§9).
    const idx = (pred: (f: Record<string, unknown>) => boolean): number => c.messages.findIndex(pred);
    expect(idx((f) => f.method === 'notifications/progress')).toBeLessThan(idx((f) => f.id === r.id));
    expect(c.logs()).toEqual([{ level: 'info', message: 'retrieve served', logger: 'prog' }]);
    // No token → no progress (§9).
    await c.request('retrieve', { query: 'vector', k: 1 });
    expect(c.notifications.filter((n) => n.method === 'notifications/progress')).toHaveLength(3);
    expect(await c.close()).toBe(0);
  });

  it('answers a cancelled in-flight request with -32006 exactly once and records the cancel', async () => {
    const events = path.join(tmpDir(), 'events.ndjson');
    const c = stdioEngine(['--id', 'cx', '--fault', 'hang', '--events', events]);
    await c.request('initialize', INIT);
    const pending = c.request('retrieve', { query: 'graph', k: 2 }, 7);
    await waitForEvent(events, (e) => e.ev === 'request' && e.id === 7);
    c.notify('notifications/cancel', { id: 999, reason: 'not in flight' });
    c.notify('notifications/cancel', { id: 7, reason: 'test' });
    const r = await pending;
    expect(r.error?.code).toBe(-32006);
    expect(await waitForEvent(events, (e) => e.ev === 'cancel' && e.id === 7)).toMatchObject({ known: true });
    expect(readEvents(events).find((e) => e.ev === 'cancel' && e.id === 999)).toMatchObject({ known: false });
    // A second cancel after the answer is ignored: nothing else arrives for id 7.
    c.notify('notifications/cancel', { id: 7 });
    await c.request('ping', {});
    expect(c.messages.filter((m) => m.id === 7)).toHaveLength(1);
    expect(c.messages.some((m) => m.id === 999)).toBe(false);

    // EOF with a request still hanging: the engine exits 0 without answering it.
    void c.request('retrieve', { query: 'graph', k: 1 }, 8).catch(() => undefined);
    await waitForEvent(events, (e) => e.ev === 'request' && e.id === 8);
    expect(await c.close()).toBe(0);
    expect(await waitForEvent(events, (e) => e.ev === 'exit')).toMatchObject({ code: 0 });
    expect(c.violations).toEqual([]);
  });

  it('follows the control file at runtime (fail → ok) and crashes on demand', async () => {
    const dir = tmpDir();
    const control = path.join(dir, 'control.json');
    writeControl(control, { fault: 'fail', failCode: -32010 });
    const c = stdioEngine(['--control', control]);
    await c.request('initialize', INIT);
    expect((await c.request('retrieve', { query: 'graph', k: 1 })).error?.code).toBe(-32010);
    expect((await c.request('ping', {})).result).toEqual({}); // faults never touch ping
    writeControl(control, { fault: 'ok' });
    expect(hitsOf(await c.request('retrieve', { query: 'graph', k: 1 }))).toHaveLength(1);
    writeControl(control, { fault: 'crash' });
    await expect(c.request('retrieve', { query: 'graph', k: 1 })).rejects.toThrow(/exited/);
    expect((await c.exited).code).toBe(1);
  });

  it('fault-init and wire-level faults are visible to a client', async () => {
    const failing = stdioEngine(['--fault-init', 'fail', '--fail-code', '-32010']);
    expect((await failing.request('initialize', INIT)).error?.code).toBe(-32010);

    const garbage = stdioEngine(['--fault', 'garbage'], { validate: false });
    await garbage.request('initialize', INIT);
    const lost = garbage.request('retrieve', { query: 'graph', k: 1 });
    expect(await garbage.close()).toBe(0);
    await expect(lost).rejects.toThrow(/exited/);
    expect(garbage.violations.join('\n')).toMatch(/non-JSON line/);

    const unknown = stdioEngine(['--fault', 'unknown-id'], { validate: false });
    await unknown.request('initialize', INIT);
    void unknown.request('retrieve', { query: 'graph', k: 1 }, 5).catch(() => undefined);
    const stray = await unknown.waitFor((f) => typeof f.id === 'string' && f.id.startsWith('unknown-'));
    expect(stray.result).toBeDefined();
    expect(unknown.violations.join('\n')).toMatch(/never sent/);

    const half = stdioEngine(['--fault', 'close-mid-answer'], { validate: false });
    await half.request('initialize', INIT);
    await expect(half.request('retrieve', { query: 'graph', k: 2 })).rejects.toThrow(/exited/);
    expect(half.violations.join('\n')).toMatch(/unterminated line/);
  });
});

describe('test engine over HTTP', () => {
  it('serves retrieve/ping/info statelessly and records request headers', async () => {
    const e = await httpEngine(['--id', 'web']);
    const ping = await rpc(e.url, 'ping', { nonce: 'abc' });
    expect(ping.status).toBe(200);
    expect(ping.result).toEqual({ nonce: 'abc' });
    expect((await rpc(e.url, 'info', {})).result?.server).toMatchObject({ name: 'test-engine-web' });
    const traceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    const r = await rpc(
      e.url,
      'retrieve',
      { query: 'fusion ranking', k: 4, _meta: { federation: { depth: 2, path: ['gw'] } } },
      { id: 'q1', headers: { traceparent } },
    );
    expect(r.id).toBe('q1');
    expect(hitsOf(r)).toHaveLength(4);
    const ev = await waitForEvent(e.eventsFile, (x) => x.ev === 'request' && x.id === 'q1');
    expect(ev.headers?.traceparent).toBe(traceparent);
    expect(ev.params?._meta).toEqual({ federation: { depth: 2, path: ['gw'] } });
    expect((await rpc(e.url, 'embed', { inputs: ['x'] })).error?.code).toBe(-32003);
    const mismatch = await rpcRaw(methodUrl(e.url, 'ping'), JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'info', params: {} }));
    expect(JSON.parse(mismatch.text).error.code).toBe(-32600);
  });

  it('--single-session keeps one session per process (-32001 before it, -32600 for a second initialize)', async () => {
    const e = await httpEngine(['--id', 'one', '--single-session']);
    expect((await rpc(e.url, 'retrieve', { query: 'fusion', k: 1 })).error?.code).toBe(-32001);
    expect((await rpc(e.url, 'info', {})).result?.server).toMatchObject({ name: 'test-engine-one' });
    expect((await rpc(e.url, 'initialize', INIT)).result?.protocolVersion).toBe(1);
    expect((await rpc(e.url, 'initialize', INIT)).error?.code).toBe(-32600);
    expect(hitsOf(await rpc(e.url, 'retrieve', { query: 'fusion', k: 1 }))).toHaveLength(1);
  });

  it('--strict-options rejects unadvertised retrieve options; without it they are ignored; filter applies when advertised', async () => {
    const caps = { retrieve: { maxK: 50 }, filter: { fields: { len: 'int' } } };
    const [strict, lax] = await Promise.all([
      httpEngine(['--id', 'strict', '--strict-options', '--caps', JSON.stringify(caps)]),
      httpEngine(['--id', 'lax']),
    ]);
    const q = { query: 'retrieval ranking fusion vector sparse graph', k: 10 };
    expect((await rpc(strict.url, 'retrieve', { ...q, mmr: { lambda: 0.5 } })).error).toMatchObject({
      code: -32005,
      data: { option: 'mmr' },
    });
    expect((await rpc(strict.url, 'retrieve', { ...q, filter: { field: 'lang', op: 'eq', value: 'en' } })).error).toMatchObject({
      code: -32602,
      data: { field: 'filter.lang' },
    });
    const filtered = hitsOf(await rpc(strict.url, 'retrieve', { ...q, filter: { field: 'len', op: 'gte', value: 5 } }));
    expect(filtered.length).toBeGreaterThan(0);
    for (const hit of filtered) expect(hit.text!.split(' ').length).toBeGreaterThanOrEqual(5);
    expect(
      hitsOf(await rpc(lax.url, 'retrieve', { ...q, mmr: { lambda: 0.5 }, filter: { field: 'len', op: 'gte', value: 99 } })),
    ).toHaveLength(10);
  });

  it('answers as SSE (progress frames then final) only when Accept asks for it', async () => {
    const e = await httpEngine([]);
    const s = await rpcSse(e.url, 'retrieve', { query: 'stream token', k: 3 }, { progressToken: 11 });
    expect(s.status).toBe(200);
    expect(s.contentType).toContain('text/event-stream');
    expect(s.progress.map((p) => p.progressToken)).toEqual([11, 11, 11]);
    expect(s.progress.map((p) => p.progress)).toEqual([0.33, 0.66, 1]);
    expect(hitsOf(s.final ?? {})).toHaveLength(3);
    expect(s.frames).toHaveLength(4);
    expect(s.framesAfterFinal).toBe(0);
    expect(s.comments).toBe(1);
    expect(s.parseErrors).toEqual([]);
    const buffered = await rpc(e.url, 'retrieve', { query: 'stream token', k: 3, _meta: { progressToken: 12 } });
    expect(buffered.headers['content-type']).toContain('application/json');
    expect(hitsOf(buffered)).toHaveLength(3);
  });

  it('records a client abort of a hanging request', async () => {
    const e = await httpEngine(['--fault', 'hang']);
    const ac = new AbortController();
    const call = rpc(e.url, 'retrieve', { query: 'graph', k: 1 }, { id: 'h1', signal: ac.signal });
    await waitForEvent(e.eventsFile, (x) => x.ev === 'request' && x.id === 'h1');
    ac.abort();
    await expect(call).rejects.toThrow();
    expect(await waitForEvent(e.eventsFile, (x) => x.ev === 'abort')).toMatchObject({ id: 'h1', method: 'retrieve' });
    expect((await rpc(e.url, 'ping', {})).result).toEqual({}); // still alive
  });

  it('injects rate limits, malformed results and broken bodies', async () => {
    const dir = tmpDir();
    const control = path.join(dir, 'control.json');
    writeControl(control, { fault: 'rate-limit', retryAfterMs: 2500 });
    const e = await httpEngine(['--control', control]);
    const rl = await rpc(e.url, 'retrieve', { query: 'graph', k: 2 });
    expect(rl.status).toBe(200);
    expect(rl.error).toMatchObject({ code: -32011, data: { retryAfterMs: 2500 } });
    expect(rl.headers['retry-after']).toBe('3');

    const call = (): Promise<RpcReply> => rpc(e.url, 'retrieve', { query: 'graph', k: 2 }, { validate: false });
    writeControl(control, { fault: 'too-many-hits' });
    expect(hitsOf(await call())).toHaveLength(6);
    writeControl(control, { fault: 'duplicate-ids' });
    const dup = hitsOf(await call()).map((h) => h.id);
    expect(new Set(dup).size).toBeLessThan(dup.length);
    writeControl(control, { fault: 'nonnumeric-scores' });
    expect(typeof hitsOf(await call())[0]?.score).toBe('string');
    writeControl(control, { fault: 'hits-not-array' });
    expect(Array.isArray((await call()).result?.hits)).toBe(false);
    writeControl(control, { fault: 'wrong-id-type' });
    expect(hitsOf(await call()).map((h) => typeof h.id)).toEqual(['object', 'boolean']);
    writeControl(control, { fault: 'huge', hugeBytes: 200_000 });
    expect(JSON.stringify(await call()).length).toBeGreaterThan(200_000);
    const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'retrieve', params: { query: 'graph', k: 2 } });
    writeControl(control, { fault: 'nan-score' });
    const nan = await rpcRaw(methodUrl(e.url, 'retrieve'), body);
    expect(nan.text).toContain('"score":1e400');
    writeControl(control, { fault: 'garbage' });
    const garbage = await rpcRaw(methodUrl(e.url, 'retrieve'), body);
    expect(() => JSON.parse(garbage.text) as unknown).toThrow();
    writeControl(control, { fault: 'close-mid-answer' });
    await expect(rpcRaw(methodUrl(e.url, 'retrieve'), body)).rejects.toThrow();
    writeControl(control, { fault: 'ok' });
    expect(hitsOf(await rpc(e.url, 'retrieve', { query: 'graph', k: 2 }))).toHaveLength(2);
  });

  it('gives disjoint/disagreeing engines and paginates with opaque cursors', async () => {
    const caps = JSON.stringify({ retrieve: { maxK: 50, modes: ['sparse'] }, pagination: {} });
    const [a, b] = await Promise.all([
      httpEngine(['--id', 'a', '--caps', caps]),
      httpEngine(['--id', 'b', '--id-prefix', 'b:', '--reverse']),
    ]);
    const ra = hitsOf(await rpc(a.url, 'retrieve', { query: 'memory', k: 50 }));
    const rb = hitsOf(await rpc(b.url, 'retrieve', { query: 'memory', k: 50 }));
    expect(rb.map((h) => h.id)).toEqual([...ra].reverse().map((h) => `b:${String(h.id)}`));
    expect(rb.map((h) => h.score)).toEqual([...rb.map((h) => h.score as number)].sort((x, y) => y - x));
    const seen: unknown[] = [];
    let cursor: unknown;
    do {
      const page: RpcReply = await rpc(a.url, 'retrieve', { query: 'memory', k: 2, ...(cursor ? { cursor } : {}) });
      seen.push(...hitsOf(page).map((h) => h.id));
      cursor = page.result?.nextCursor;
    } while (cursor);
    expect(seen).toEqual(ra.map((h) => h.id));
  });

  it('implements the other capability-gated methods when advertised', async () => {
    const caps = {
      embed: { dimension: 6, identity: 'hash' },
      sparseEmbed: { identity: 'hash' },
      multiVector: { dimension: 3, identity: 'hash' },
      rerank: { methods: ['cross-encoder'] },
      transform: { methods: ['multi-query', 'hyde'] },
      graph: { ops: ['local', 'global', 'drift', 'communities', 'neighbors'] },
      index: { writable: true },
      feedback: {},
      memory: { scopes: ['global'] },
      retrieve: { maxK: 50 },
      'x-test': {},
    };
    const e = await httpEngine(['--caps', JSON.stringify(caps)]);
    const emb = await rpc(e.url, 'embed', { texts: ['a b', 'c'] });
    expect((emb.result?.vectors as number[][]).map((v) => v.length)).toEqual([6, 6]);
    expect((await rpc(e.url, 'embed', { inputs: ['a b'] })).result?.vectors).toEqual([(emb.result?.vectors as number[][])[0]]);
    expect((await rpc(e.url, 'embed/sparse', { texts: ['a b a'] })).result?.sparse).toHaveLength(1);
    expect((await rpc(e.url, 'embed/multi', { inputs: ['a b'] })).result).toMatchObject({ dimension: 3 });
    const rr = await rpc(e.url, 'rerank', { query: 'graph', passages: ['cache', 'graph index'], method: 'cross-encoder' });
    expect(rr.result?.order).toEqual([1, 0]);
    expect((await rpc(e.url, 'rerank', { query: 'q', passages: ['x'], method: 'llm' })).error).toMatchObject({
      code: -32005,
      data: { option: 'llm' },
    });
    expect((await rpc(e.url, 'query/transform', { query: 'q', method: 'multi-query', n: 4 })).result?.queries).toHaveLength(4);
    expect((await rpc(e.url, 'graph', { op: 'drift', query: 'graph', k: 2 })).result).toMatchObject({
      followups: expect.any(Array) as unknown,
    });
    expect((await rpc(e.url, 'graph', { op: 'global', query: 'graph' })).result?.summary).toEqual(expect.any(String));
    expect((await rpc(e.url, 'graph', { op: 'neighbors', seedIds: ['d1'], k: 3 })).result?.nodes).toHaveLength(3);
    expect((await rpc(e.url, 'graph', { op: 'communities' })).result?.communities).toEqual(expect.any(Array));
    const add = await rpc(e.url, 'index/add', {
      documents: [{ id: 'new1', text: 'zebra' }, { text: 'zebra giraffe' }, { id: 'new1', text: 'zebra okapi' }],
    });
    expect(add.result?.ids).toEqual(['new1', 'm1', 'new1']);
    expect(
      hitsOf(await rpc(e.url, 'retrieve', { query: 'zebra', k: 10 }))
        .map((h) => h.id)
        .sort(),
    ).toEqual(['m1', 'new1']);
    expect((await rpc(e.url, 'index/delete', { ids: ['new1', 'nope'] })).result).toEqual({ deleted: 1 });
    expect((await rpc(e.url, 'index/delete', { ids: ['new1'] })).result).toEqual({ deleted: 0 });
    expect((await rpc(e.url, 'feedback', { signals: [{ hitId: 'd1', used: true }, { hitId: 'd2' }] })).result).toEqual({ accepted: 2 });
    const mem = await rpc(e.url, 'memory/build', {});
    const recall = await rpc(e.url, 'memory/recall', { query: 'graph', memoryId: mem.result?.memoryId, n: 2 });
    expect(recall.result?.clues).toHaveLength(2);
    expect((await rpc(e.url, 'x-test/echo', { a: 1 })).result).toEqual({ echo: { a: 1 } });
  });
});

it.skipIf(!schemaAvailable)('the spec validator rejects what the schema forbids', () => {
  expect(validateFrame({ jsonrpc: '2.0', id: 1, result: { hits: [{ id: 'a', score: 1 }] } }, 'retrieve')).toEqual([]);
  expect(validateFrame({ jsonrpc: '2.0', id: 1, result: { hits: [{ id: 'a', score: '1' }] } }, 'retrieve')).not.toEqual([]);
  expect(validateFrame({ jsonrpc: '2.0', id: 1, result: { hits: {} } }, 'retrieve')).not.toEqual([]);
  expect(validateFrame({ jsonrpc: '2.0', id: null, result: {} })).not.toEqual([]);
  expect(validateFrame({ jsonrpc: '2.0', method: 'notifications/progress', params: { progress: 0.5 } })).not.toEqual([]);
});

it.skipIf(!schemaAvailable)('every frame the engine emitted (outside deliberate faults) is schema-valid', () => {
  expect(emittedCount()).toBeGreaterThan(50);
  expect(emittedErrors()).toEqual([]);
});

afterAll(() => {
  console.log(schemaCrossCheckBanner());
});
