/**
 * What a hostile client sends, through a real gateway process: params nested absurdly deep,
 * method names built to escape the engine's URL path, bad percent-escapes, cross-site content
 * types, oversized or malformed trace ids, numeric ids beyond 2^53, altered cursors. Each is
 * refused at the gateway with a §12 code before any engine sees it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GatewayHandle } from '../support/processes.js';
import { gatewayOver, hostileEngine, post, rawRequest, retrieveMessage, type HostileEngine, type Json } from './support.js';

let engine: HostileEngine;
let gw: GatewayHandle;

beforeAll(async () => {
  engine = await hostileEngine((call) =>
    call.method === 'retrieve'
      ? { hits: Array.from({ length: 10 }, (_, i) => ({ id: `d${i}`, score: 10 - i, text: `doc ${i}` })) }
      : { done: true },
  );
  gw = await gatewayOver([engine.url], { breaker: { volumeThreshold: 2 } });
});

afterAll(async () => {
  expect(await gw.stop()).toBe(0);
  await engine.close();
});

/** A retrieve whose unknown param `junk` is nested `depth` objects deep (built as text: too deep for JSON.stringify). */
function deepRetrieve(id: number, depth: number): string {
  const junk = '{"a":'.repeat(depth) + '"leaf"' + '}'.repeat(depth);
  return `{"jsonrpc":"2.0","id":${id},"method":"retrieve","params":{"query":"q","k":3,"junk":${junk}}}`;
}

describe('params nested absurdly deep (breaker abuse)', () => {
  it('is answered -32602 before any engine is called, and never opens a breaker', async () => {
    const before = engine.callsOf('retrieve').length;
    for (let i = 0; i < 8; i++) {
      const res = await rawRequest(gw.url, { body: deepRetrieve(i, 5_000) });
      expect(res.status).toBe(200);
      expect((res.json() as Json).error).toMatchObject({ code: -32602 });
    }
    expect(engine.callsOf('retrieve').length).toBe(before);
    const ok = (await post(gw.url, retrieveMessage('after', { query: 'q', k: 3 })).then((r) => r.json())) as Json;
    expect(ok.result).toMatchObject({ hits: expect.any(Array) });
  });
});

describe('method names (§4.1 grammar)', () => {
  const hostile = [
    'x-acme/../../admin/delete?all=1',
    'x-acme/%2e%2e/%2e%2e/admin',
    'x-acme/do-thing#frag',
    'x-acme/user@evil',
    'x-acme/a\r\nX-Injected: 1',
    'x-acme/do-thing?x=1',
    'x-acme/Do-Thing',
    'x-acme//do-thing',
  ];
  it.each(hostile)('refuses %j with -32600 and no engine call', async (method) => {
    const before = engine.calls.length;
    const res = await post(gw.url, { jsonrpc: '2.0', id: 1, method, params: {} });
    expect((res.json() as Json).error).toMatchObject({ code: -32600 });
    expect(engine.calls.slice(before).map((c) => c.path)).toEqual([]);
  });

  it('a well-formed vendor method reaches the engine at exactly <base>/<method>', async () => {
    const res = await post(gw.url, { jsonrpc: '2.0', id: 2, method: 'x-acme/do-thing', params: {} });
    expect((res.json() as Json).result).toMatchObject({ done: true });
    expect(engine.callsOf('x-acme/do-thing').map((c) => c.path)).toEqual(['/rcp/x-acme/do-thing']);
  });

  it('no engine ever saw a path outside <base>/<well-formed method>', () => {
    for (const call of engine.calls) expect(call.path).toMatch(/^\/rcp\/[a-z0-9-]+(\/[a-z0-9-]+)*$/);
  });
});

describe('HTTP envelope', () => {
  it('a bad percent-escape in the path is a JSON 400, not a 500 with a stack', async () => {
    const res = await rawRequest(gw.url, { path: '/rcp/%E0%A4%A', body: JSON.stringify(retrieveMessage(1)) });
    expect(res.status).toBe(400);
    expect(res.headers['content-type']).toContain('application/json');
    expect((res.json() as Json).error).toMatchObject({ code: -32600 });
    expect(gw.stderr()).not.toMatch(/URIError|^\s+at /m);
  });

  it.each(['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x'])(
    'a POST with Content-Type %s is refused with 415 before any engine call',
    async (type) => {
      const before = engine.calls.length;
      const res = await rawRequest(gw.url, { body: JSON.stringify(retrieveMessage(1)), headers: { 'content-type': type } });
      expect(res.status).toBe(415);
      expect((res.json() as Json).error).toMatchObject({ code: -32600 });
      expect(engine.calls.length).toBe(before);
    },
  );

  it('application/json with a charset is accepted', async () => {
    const res = await rawRequest(gw.url, {
      body: JSON.stringify(retrieveMessage(1)),
      headers: { 'content-type': 'application/json; charset=utf-8' },
    });
    expect((res.json() as Json).result).toBeDefined();
  });
});

describe('_meta.traceId', () => {
  it.each([
    ['CRLF', 'abc\r\nX-Evil: 1'],
    ['100 KB', 'a'.repeat(100_000)],
  ])('a %s trace id is never forwarded, echoed or logged', async (_what, traceId) => {
    const before = engine.callsOf('retrieve').length;
    const res = (await post(gw.url, retrieveMessage(1, { query: 'q', k: 2, _meta: { traceId } })).then((r) => r.json())) as Json;
    const meta = (res.result as Json)._meta as Json;
    expect(meta.traceId).toMatch(/^[0-9a-f]{32}$/);
    const forwarded = engine.callsOf('retrieve').slice(before);
    expect(forwarded.length).toBeGreaterThan(0);
    for (const call of forwarded) expect((call.params._meta as Json).traceId).toMatch(/^[0-9a-f]{32}$/);
    expect(gw.stderr()).not.toContain(traceId.slice(0, 200));
  });

  it('a well-formed trace id is kept end to end', async () => {
    const res = (await post(gw.url, retrieveMessage(1, { query: 'q', k: 2, _meta: { traceId: 'req-42.alpha' } })).then((r) =>
      r.json(),
    )) as Json;
    expect(((res.result as Json)._meta as Json).traceId).toBe('req-42.alpha');
  });
});

describe('numeric ids beyond 2^53', () => {
  it('are refused (-32600, id null) instead of echoed with lost precision', async () => {
    const res = await rawRequest(gw.url, { body: '{"jsonrpc":"2.0","id":9007199254740993,"method":"ping","params":{}}' });
    expect(res.text).not.toContain('9007199254740992');
    expect(res.json()).toMatchObject({ id: null, error: { code: -32600 } });
  });

  it('a safe integer id is echoed as sent', async () => {
    const res = await rawRequest(gw.url, { body: '{"jsonrpc":"2.0","id":9007199254740991,"method":"ping","params":{}}' });
    expect(res.text).toContain('"id":9007199254740991');
  });
});

describe('pagination cursors', () => {
  it('a cursor whose text is altered in any way is refused (-32602), only the issued text verifies', async () => {
    const first = (await post(gw.url, retrieveMessage(1, { query: 'q', k: 2 })).then((r) => r.json())) as Json;
    const cursor = (first.result as Json).nextCursor as string;
    expect(typeof cursor).toBe('string');
    const [body, mac] = cursor.split('.') as [string, string];
    const variants = [
      `${body}.${mac}=`,
      `${body}=.${mac}`,
      `${body}.${mac.slice(0, -1)}${mac.endsWith('A') ? 'B' : 'A'}`,
      `${body}.${mac.toUpperCase()}`,
      ` ${cursor}`,
      `${cursor}\n`,
    ];
    for (const altered of variants) {
      const res = (await post(gw.url, retrieveMessage(2, { query: 'q', k: 2, cursor: altered })).then((r) => r.json())) as Json;
      expect(res.error, altered).toMatchObject({ code: -32602, data: { field: 'cursor' } });
    }
    const next = (await post(gw.url, retrieveMessage(3, { query: 'q', k: 2, cursor })).then((r) => r.json())) as Json;
    expect((next.result as Json).hits).toHaveLength(2);
  });
});
