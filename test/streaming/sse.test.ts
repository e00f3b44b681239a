/**
 * SSE from the gateway to an HTTP client (§5.2, §9), end to end: a real gateway process, real
 * test engines, and a client parsing the stream the way a browser does (eventsource-parser).
 * Engines change behaviour per test through their control files; `_meta["x-rcpgw"].engines`
 * picks which of them a request fans out to.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetch } from 'undici';
import { methodUrl, rpc, rpcSse, type SseReply } from '../support/http-client.js';
import {
  readEvents,
  waitForEvent,
  startGateway,
  startHttpEngine,
  tmpDir,
  writeControl,
  type EngineEvent,
  type EngineHandle,
  type GatewayHandle,
} from '../support/processes.js';
import { emittedErrors, schemaCrossCheck, schemaCrossCheckBanner } from '../support/spec-validator.js';
import { cleanups, engineAnswer, rrfIds, runCleanups } from './helpers.js';

interface Hit {
  id: string | number;
  score: number;
  meta: { engine: string };
}
interface RetrieveResult {
  hits: Hit[];
  _meta: { engines: string[]; degraded?: Array<{ engine: string; code: number; reason: string }> };
}
type Progress = SseReply['progress'][number] & { partial?: { hits?: Hit[] } };

const NO_STREAMING_CAPS = JSON.stringify({ retrieve: { maxK: 50, modes: ['sparse'] } });
const EMBEDDING_CAPS = JSON.stringify({
  retrieve: { maxK: 50, modes: ['sparse'] },
  streaming: {},
  embed: { dimension: 8, identity: 'hash-8' },
});
const dir = tmpDir('rcp-sse-');
const controls = { a: `${dir}/a.json`, b: `${dir}/b.json`, c: `${dir}/c.json` };
const engines: Record<'a' | 'b' | 'c', EngineHandle> = {} as Record<'a' | 'b' | 'c', EngineHandle>;
let gw: GatewayHandle;

/** Reset every engine to a plain healthy answer, then apply this test's behaviours. */
function behave(overrides: Partial<Record<'a' | 'b' | 'c', Record<string, unknown>>> = {}): void {
  for (const id of ['a', 'b', 'c'] as const)
    writeControl(controls[id], { fault: 'ok', progressFrames: 3, progressIntervalMs: 0, ...overrides[id] });
}

/** Retrieve params fanning out to `use` only; the query is unique so engine events can be found by it. */
function retrieveParams(query: string, use: string[], meta: Record<string, unknown> = {}): Record<string, unknown> {
  return { query, k: 5, _meta: { ...meta, 'x-rcpgw': { engines: use } } };
}

function requestEvent(engine: EngineHandle, query: string): EngineEvent | undefined {
  return readEvents(engine.eventsFile).find((e) => e.ev === 'request' && e.method === 'retrieve' && e.params?.query === query);
}

beforeAll(async () => {
  behave();
  engines.a = await startHttpEngine(['--id', 'a', '--control', controls.a]);
  engines.b = await startHttpEngine(['--id', 'b', '--reverse', '--caps', EMBEDDING_CAPS, '--control', controls.b]);
  engines.c = await startHttpEngine(['--id', 'c', '--caps', NO_STREAMING_CAPS, '--control', controls.c]);
  for (const engine of Object.values(engines)) cleanups.push(() => engine.stop());
  gw = await startGateway({
    config: {
      engines: (['a', 'b', 'c'] as const).map((id) => ({ id, transport: 'http', url: engines[id].url })),
      gateway: { sseHeartbeatMs: 50, progressFramesPerSecond: 20 },
    },
  });
  cleanups.push(() => gw.stop());
});

afterAll(async () => {
  await runCleanups();
  console.log(schemaCrossCheckBanner());
  expect(emittedErrors()).toEqual([]);
});

describe('SSE framing (§5.2)', () => {
  it('streams progress then exactly one final frame, with proxy-safe headers and nothing after it', async () => {
    behave();
    const reply = await rpcSse(gw.url, 'retrieve', retrieveParams('retrieval fusion framing', ['a', 'b']), {
      id: 'framing-1',
      progressToken: 'tok-framing',
      headers: { 'accept-encoding': 'gzip, deflate, br' },
    });
    expect(reply.status).toBe(200);
    expect(reply.contentType).toMatch(/^text\/event-stream/);
    expect(reply.headers['cache-control']).toMatch(/no-cache/);
    expect(reply.headers['cache-control']).toMatch(/no-transform/);
    expect(reply.headers['x-accel-buffering']).toBe('no');
    expect(reply.headers['content-encoding']).toBeUndefined(); // never compressed, even when offered
    expect(reply.parseErrors).toEqual([]);
    expect(reply.final?.id).toBe('framing-1');
    expect(reply.final?.result).toBeDefined();
    expect(reply.frames.at(-1)).toBe(reply.final);
    expect(reply.framesAfterFinal).toBe(0);
    expect(reply.progress.length).toBeGreaterThan(0);
    for (const frame of reply.progress) expect(frame.progressToken).toBe('tok-framing');
  });

  it('writes each frame as one `data:` line and a blank line; comments are the only other lines', async () => {
    behave({ a: { fault: 'slow', delayMs: 300 } });
    const body = JSON.stringify({
      jsonrpc: '2.0',
      id: 'raw-1',
      method: 'retrieve',
      params: retrieveParams('retrieval raw lines', ['a'], { progressToken: 'raw' }),
    });
    const res = await fetch(methodUrl(gw.url, 'retrieve'), {
      method: 'POST',
      body,
      headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
    });
    const text = await res.text();
    expect(text.endsWith('\n\n')).toBe(true);
    const blocks = text.slice(0, -2).split('\n\n');
    let comments = 0;
    const frames: unknown[] = [];
    for (const block of blocks) {
      expect(block).not.toContain('\n'); // one line per frame
      if (block.startsWith(':')) {
        comments++;
        continue;
      }
      expect(block.startsWith('data: ')).toBe(true);
      frames.push(JSON.parse(block.slice('data: '.length)));
    }
    expect(comments).toBeGreaterThan(0); // `: keep-alive` while engine a took its time
    const last = frames.at(-1) as { id?: unknown; result?: unknown };
    expect(last.id).toBe('raw-1');
    expect(last.result).toBeDefined();
    expect(frames.slice(0, -1).every((f) => (f as { method?: string }).method === 'notifications/progress')).toBe(true);
  });

  it('answers one buffered JSON response without `Accept: text/event-stream`, token or not', async () => {
    behave();
    const reply = await rpc<RetrieveResult>(
      gw.url,
      'retrieve',
      retrieveParams('retrieval buffered', ['a', 'b'], { progressToken: 'unused' }),
      { id: 'json-1' },
    );
    expect(reply.status).toBe(200);
    expect(reply.headers['content-type']).toMatch(/^application\/json/);
    expect(reply.id).toBe('json-1');
    expect(reply.result?.hits.length).toBeGreaterThan(0);
  });

  it('answers a posted notification with 204 and no body, even when SSE is accepted', async () => {
    const res = await fetch(methodUrl(gw.url, 'notifications/cancel'), {
      method: 'POST',
      body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/cancel', params: { id: 'nobody' } }),
      headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
    });
    expect(res.status).toBe(204);
    expect(await res.text()).toBe('');
  });

  it('issues no session token when httpSessions is off (the default)', async () => {
    const reply = await rpc<{ _meta?: Record<string, unknown> }>(gw.url, 'initialize', { protocolVersion: 1 });
    expect(reply.result?._meta?.session).toBeUndefined();
  });
});

describe('progress tokens (§9)', () => {
  it.each([
    ['a string token', 'client-token-α'],
    ['an integer token', 42],
    ['the integer token 0', 0],
  ])('echoes %s verbatim in every frame', async (_label, token) => {
    behave();
    const reply = await rpcSse(gw.url, 'retrieve', retrieveParams(`retrieval token ${String(token)}`, ['a', 'b']), {
      progressToken: token,
    });
    expect(reply.final?.result).toBeDefined();
    expect(reply.progress.length).toBeGreaterThan(0);
    for (const frame of reply.progress) {
      expect(typeof frame.progressToken).toBe(typeof token);
      expect(frame.progressToken).toBe(token);
    }
  });

  it('sends no progress for a request without a token, and asks no engine to stream', async () => {
    behave();
    const query = 'retrieval fusion no token';
    const reply = await rpcSse(gw.url, 'retrieve', retrieveParams(query, ['a', 'b']));
    expect(reply.contentType).toMatch(/^text\/event-stream/);
    expect(reply.progress).toEqual([]);
    expect(reply.frames).toEqual([reply.final]);
    for (const engine of [engines.a, engines.b]) {
      const request = requestEvent(engine, query)!;
      expect((request.params?._meta as Record<string, unknown>).progressToken).toBeUndefined();
      expect(String(request.headers?.accept ?? '')).not.toContain('text/event-stream');
    }
  });

  it('asks for SSE, under a token of its own, only engines that advertise streaming', async () => {
    behave();
    const query = 'retrieval per leg tokens';
    const reply = await rpcSse(gw.url, 'retrieve', retrieveParams(query, ['a', 'c']), { progressToken: 'mine' });
    expect(reply.final?.result).toBeDefined();
    const streamed = requestEvent(engines.a, query)!;
    const upstreamToken = (streamed.params?._meta as Record<string, unknown>).progressToken;
    expect(typeof upstreamToken).toBe('string');
    expect(upstreamToken).not.toBe('mine'); // each leg has its own token
    expect(String(streamed.headers?.accept)).toContain('text/event-stream');
    const plain = requestEvent(engines.c, query)!;
    expect((plain.params?._meta as Record<string, unknown>).progressToken).toBeUndefined();
    expect(String(plain.headers?.accept ?? '')).not.toContain('text/event-stream');
    // The upstream token never reaches the client.
    expect(JSON.stringify(reply.frames)).not.toContain(String(upstreamToken));
    for (const frame of reply.progress) expect(frame.progressToken).toBe('mine');
  });
});

describe('delivery while engines work', () => {
  it('delivers a progress frame before the final one while the engine is still working', async () => {
    behave({ a: { fault: 'slow', delayMs: 800, progressFrames: 2 } });
    const query = 'retrieval flushed early';
    let sawProgressWhileWorking = false;
    let checked = false;
    const reply = await rpcSse(gw.url, 'retrieve', retrieveParams(query, ['a']), {
      progressToken: 'early',
      onFrame: (frame) => {
        if (checked || (frame as { method?: string }).method !== 'notifications/progress') return;
        checked = true;
        // At the moment the client holds a progress frame, has the engine answered yet?
        const request = requestEvent(engines.a, query);
        const answered = readEvents(engines.a.eventsFile).some((e) => e.ev === 'response' && request !== undefined && e.id === request.id);
        sawProgressWhileWorking = request !== undefined && !answered;
      },
    });
    expect(checked).toBe(true);
    expect(sawProgressWhileWorking).toBe(true);
    expect(reply.final?.result).toBeDefined();
  });

  it('sends `: keep-alive` comments on a long call, and the deadline cancels the hanging leg', async () => {
    behave({ a: { fault: 'hang' } });
    const query = 'retrieval heartbeat deadline';
    const reply = await rpcSse(gw.url, 'retrieve', retrieveParams(query, ['a', 'b'], { deadlineMs: 600 }), { progressToken: 'hb' });
    expect(reply.comments).toBeGreaterThan(0);
    const result = reply.final?.result as unknown as RetrieveResult;
    expect(result._meta.engines).toEqual(['b']);
    expect(result._meta.degraded).toEqual([expect.objectContaining({ engine: 'a', code: -32014 })]);
    // The answer came at the deadline, not from engine a, so a may log even its request after it: wait for both.
    const request = await waitForEvent(
      engines.a.eventsFile,
      (e) => e.ev === 'request' && e.method === 'retrieve' && e.params?.query === query,
    );
    // The engine logs the abort when its socket closes, which may land just after the answer: wait for it.
    const abort = await waitForEvent(engines.a.eventsFile, (e) => e.ev === 'abort' && e.id === request.id);
    expect(abort.id).toBe(request.id);
  });

  it('relays a routed method’s progress under the client token, bounded and monotone', async () => {
    behave({ b: { progressFrames: 400 } });
    const reply = await rpcSse(gw.url, 'embed', { inputs: ['retrieval', 'fusion'] }, { progressToken: 'routed' });
    expect((reply.final?.result as { vectors?: unknown[] } | undefined)?.vectors).toHaveLength(2);
    expect(reply.progress.length).toBeGreaterThan(0);
    expect(reply.progress.length).toBeLessThan(40); // the engine sent 400
    const values = reply.progress.map((p) => p.progress!);
    for (let i = 1; i < values.length; i++) expect(values[i]!).toBeGreaterThanOrEqual(values[i - 1]!);
    for (const frame of reply.progress) {
      expect(frame.progressToken).toBe('routed');
      expect(frame.message).toMatch(/from engine b/);
    }
  });

  it('coalesces a chatty engine to a bounded number of frames', async () => {
    behave({ a: { progressFrames: 400 } });
    const reply = await rpcSse(gw.url, 'retrieve', retrieveParams('retrieval chatty engine', ['a']), { progressToken: 'chatty' });
    expect(reply.final?.result).toBeDefined();
    expect(reply.progress.length).toBeGreaterThan(0);
    expect(reply.progress.length).toBeLessThan(40); // the engine sent 400
  });
});

describe('aggregated progress and partial hits (§9, §16.3)', () => {
  it('is monotone in [0, 1] and carries the running RRF of the engines that answered', async () => {
    behave({ c: { fault: 'hang' } });
    const query = 'retrieval fusion ranking vector sparse';
    const reply = await rpcSse(gw.url, 'retrieve', retrieveParams(query, ['a', 'b', 'c'], { deadlineMs: 800 }), { progressToken: 'agg' });
    const result = reply.final?.result as unknown as RetrieveResult;
    expect(result._meta.engines.sort()).toEqual(['a', 'b']);

    const values = reply.progress.map((p) => p.progress!);
    expect(values.length).toBeGreaterThan(0);
    for (const value of values) {
      expect(value).toBeGreaterThanOrEqual(0);
      expect(value).toBeLessThanOrEqual(1);
    }
    for (let i = 1; i < values.length; i++) expect(values[i]!).toBeGreaterThanOrEqual(values[i - 1]!);
    // The gateway's own leg frames say how many engines answered.
    expect(reply.progress.some((p) => /2 of 3 engines answered/.test(p.message ?? ''))).toBe(true);

    // Each engine's own answer, asked directly with the k the gateway asked it for.
    const own: Record<string, Awaited<ReturnType<typeof engineAnswer>>> = {};
    for (const id of ['a', 'b'] as const) {
      const request = requestEvent(engines[id], query)!;
      own[id] = await engineAnswer(engines[id].url, { query, k: request.params?.k });
    }
    const withPartial = (reply.progress as Progress[]).filter((p) => p.partial?.hits !== undefined);
    expect(withPartial.length).toBeGreaterThan(0);
    for (const frame of withPartial) {
      const answered = /2 of 3/.test(frame.message!) ? ['a', 'b'] : [/engine (a|b) answered/.exec(frame.message!)![1]!];
      const expected = rrfIds(
        answered.map((id) => ({ engine: id, hits: own[id]! })),
        5,
      );
      expect(frame.partial!.hits!.map((h) => String(h.id))).toEqual(expected);
    }
    // The final answer is authoritative, and here equals the fusion of the two that answered.
    expect(result.hits.map((h) => String(h.id))).toEqual(
      rrfIds(
        [
          { engine: 'a', hits: own.a! },
          { engine: 'b', hits: own.b! },
        ],
        5,
      ),
    );
  });

  it('treats an engine answering -32006 on its own as that leg failing, not the call', async () => {
    behave({ b: { fault: 'cancelled' } });
    const reply = await rpcSse(gw.url, 'retrieve', retrieveParams('retrieval engine gave up', ['a', 'b']), { progressToken: 'own-cancel' });
    expect(reply.final?.error).toBeUndefined();
    const result = reply.final?.result as unknown as RetrieveResult;
    expect(result._meta.engines).toEqual(['a']);
    expect(result._meta.degraded).toEqual([expect.objectContaining({ engine: 'b', reason: 'engine-cancelled' })]);
    expect(result._meta.degraded![0]!.code).not.toBe(-32006); // the client did not cancel anything
    expect(reply.progress.some((p) => /engine b failed/.test(p.message ?? ''))).toBe(true);
  });
});

schemaCrossCheck();
