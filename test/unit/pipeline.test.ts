/**
 * The composed upstream pipeline (retry → deadline → fail-fast → limiter → breaker → send):
 * the order its layers run in, shown by what reaches a recording stand-in for the transport,
 * and the transport step itself (time left, progress and logs only when advertised).
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { EngineBreaker } from '../../src/core/resilience/breaker.js';
import { Limiter } from '../../src/core/resilience/limiter.js';
import { RetryBudget, type RetryPolicy } from '../../src/core/resilience/retry.js';
import type { Call, UpstreamCall } from '../../src/core/upstream/call.js';
import { UpstreamError } from '../../src/core/upstream/errors.js';
import { composePipeline } from '../../src/core/upstream/pipeline.js';
import { sendVia } from '../../src/core/upstream/send.js';
import type { JsonObject } from '../../src/core/protocol/jsonrpc.js';
import { breakerSettings, deferred, FakeTransport, recordingSend, upstreamCall } from './upstream-fakes.js';

const fault = (retryAfterMs?: number): UpstreamError =>
  new UpstreamError('remote-error', 'internal', { code: -32603, message: 'internal' }, retryAfterMs);

interface Rig {
  pipeline: Call;
  limiter: Limiter;
  breaker: EngineBreaker;
  shed: ReturnType<typeof vi.fn>;
  ready: { value: boolean };
}

function rig(send: Call, options: { concurrency?: number; maxQueue?: number; volumeThreshold?: number; timeoutMs?: number } = {}): Rig {
  const shed = vi.fn();
  const limiter = new Limiter(options.concurrency ?? 1, options.maxQueue ?? 4, shed);
  const breaker = new EngineBreaker(breakerSettings({ volumeThreshold: options.volumeThreshold ?? 1 }));
  const ready = { value: true };
  const pipeline = composePipeline({
    timeoutMs: options.timeoutMs ?? 10_000,
    admission: {
      notReady: () => (ready.value ? undefined : new UpstreamError('not-ready', 'engine is down')),
      get breakerAdmits() {
        return breaker.admits;
      },
    },
    limiter,
    breaker,
    send,
  });
  return { pipeline, limiter, breaker, shed, ready };
}

const retry = (): RetryPolicy => ({ budget: new RetryBudget({ budgetRatio: 0.1, minPerWindow: 10, windowMs: 10_000 }), backoffMs: 0 });

let rigs: Rig[] = [];
const make = (...args: Parameters<typeof rig>): Rig => {
  const r = rig(...args);
  rigs.push(r);
  return r;
};

beforeEach(() => {
  vi.useFakeTimers();
});

afterEach(() => {
  for (const r of rigs) r.breaker.shutdown();
  rigs = [];
  vi.useRealTimers();
});

describe('upstream pipeline order', () => {
  it('a call refused by an open breaker never takes a limiter slot', async () => {
    const hanging = deferred<JsonObject>();
    const send = recordingSend((call) => (call.method === 'hang' ? hanging.promise : Promise.reject(fault())));
    const r = make(send, { concurrency: 2, maxQueue: 0, volumeThreshold: 1 });
    void r.pipeline(upstreamCall({ method: 'hang' }));
    await r.pipeline(upstreamCall({ method: 'fail' })).catch(() => undefined);
    expect(r.breaker.currentState).toBe('open');
    // Fill the limiter: a call that reached it now would be shed (queue-full), not refused.
    void r.limiter.layer(() => hanging.promise)(upstreamCall({ method: 'other' }));
    expect(r.limiter.active).toBe(2);
    await expect(r.pipeline(upstreamCall({ method: 'refused' }))).rejects.toMatchObject({ reason: 'circuit-open' });
    expect(r.shed).not.toHaveBeenCalled();
    expect(r.limiter.active).toBe(2);
    expect(send.calls.map((c) => c.method)).toEqual(['hang', 'fail']);
    hanging.resolve({});
  });

  it('an engine that is not ready refuses before the breaker or the limiter see the call', async () => {
    const send = recordingSend();
    const r = make(send, { concurrency: 1, maxQueue: 0 });
    r.ready.value = false;
    await expect(r.pipeline(upstreamCall())).rejects.toMatchObject({ reason: 'not-ready' });
    expect(r.shed).not.toHaveBeenCalled();
    expect(send.calls).toHaveLength(0);
  });

  it('a shed call never reaches the transport and says nothing to the breaker', async () => {
    const hanging = deferred<JsonObject>();
    const send = recordingSend(() => hanging.promise);
    const r = make(send, { concurrency: 1, maxQueue: 0, volumeThreshold: 1 });
    void r.pipeline(upstreamCall({ method: 'hang' }));
    await expect(r.pipeline(upstreamCall({ method: 'shed', retry: retry() }))).rejects.toMatchObject({ reason: 'queue-full' });
    expect(r.shed).toHaveBeenCalledTimes(1);
    expect(send.calls.map((c) => c.method)).toEqual(['hang']);
    expect(r.breaker.currentState).toBe('closed');
    hanging.resolve({});
  });

  it('a malformed answer is judged inside the breaker and opens it', async () => {
    const r = make(
      recordingSend(() => Promise.resolve({ hits: 'nope' })),
      { volumeThreshold: 1 },
    );
    const validate = (result: JsonObject): void => {
      if (!Array.isArray(result.hits)) throw new UpstreamError('malformed', 'hits is not an array');
    };
    await expect(r.pipeline(upstreamCall({ validate }))).rejects.toMatchObject({ reason: 'malformed' });
    expect(r.breaker.currentState).toBe('open');
  });

  it("time spent queued counts against the attempt's budget: the transport gets only what is left", async () => {
    const first = deferred<JsonObject>();
    const send = recordingSend((call) => (call.method === 'first' ? first.promise : Promise.resolve({})));
    const r = make(send, { concurrency: 1, timeoutMs: 400 });
    void r.pipeline(upstreamCall({ method: 'first' }));
    const start = performance.now();
    const second = r.pipeline(upstreamCall({ method: 'second', deadlineAt: start + 5_000 }));
    await vi.advanceTimersByTimeAsync(200);
    first.resolve({});
    await second;
    const sent = send.calls[1]!;
    expect(sent.expiresAt).toBe(start + 400);
    expect(sent.expiresAt! - performance.now()).toBe(200);
  });

  it('a queued call gives up when its budget runs out in the queue, and is never sent', async () => {
    const first = deferred<JsonObject>();
    const send = recordingSend((call) => (call.method === 'first' ? first.promise : Promise.resolve({})));
    const r = make(send, { concurrency: 1, timeoutMs: 400 });
    void r.pipeline(upstreamCall({ method: 'first' }));
    const late = r.pipeline(upstreamCall({ method: 'late', deadlineAt: performance.now() + 5_000 })).catch((err: unknown) => err);
    await vi.advanceTimersByTimeAsync(400);
    expect(await late).toMatchObject({ reason: 'timeout' });
    first.resolve({});
    // The freed slot goes to the given-up call, which releases it unused.
    await vi.advanceTimersByTimeAsync(1_000);
    expect(r.limiter.active + r.limiter.waiting).toBe(0);
    expect(send.calls.map((c) => c.method)).toEqual(['first']);
    // Giving up in the queue is not the engine's fault.
    expect(r.breaker.currentState).toBe('closed');
  });

  it('each attempt is told a strictly smaller deadline, and a retry goes through the whole pipeline again', async () => {
    let n = 0;
    const send = recordingSend(() => (n++ === 0 ? Promise.reject(fault(40)) : Promise.resolve({ ok: true })));
    const r = make(send, { volumeThreshold: 10 });
    const answer = r.pipeline(upstreamCall({ deadlineAt: performance.now() + 1_000, retry: retry() }));
    await vi.advanceTimersByTimeAsync(40);
    await expect(answer).resolves.toEqual({ ok: true });
    const told = send.calls.map((c) => (c.params._meta as JsonObject).deadlineMs as number);
    expect(told).toEqual([999, 959]);
  });

  it('a retry is refused when the first attempt opened the breaker (retry is outermost)', async () => {
    const send = recordingSend(() => Promise.reject(fault()));
    const r = make(send, { volumeThreshold: 1 });
    await expect(r.pipeline(upstreamCall({ retry: retry() }))).rejects.toMatchObject({ reason: 'circuit-open' });
    expect(send.calls).toHaveLength(1);
  });
});

describe('send step', () => {
  const call = (over: Partial<UpstreamCall> = {}): UpstreamCall =>
    upstreamCall({ onProgress: () => undefined, onLog: () => undefined, ...over });

  it('relays progress and logs only from an engine that advertised them, with the time left as its timeout', async () => {
    const transport = new FakeTransport();
    let caps = new Set<string>();
    const send = sendVia({ transport, has: (c) => caps.has(c), maxResponseBytes: 1_000 });
    await send(call({ expiresAt: performance.now() + 250 }));
    expect(transport.sent[0]!.options).toMatchObject({
      timeoutMs: 250,
      stream: false,
      onProgress: undefined,
      onLog: undefined,
      maxResponseBytes: 1_000,
    });
    caps = new Set(['streaming']);
    await send(call());
    expect(transport.sent[1]!.options.stream).toBe(true);
    expect(transport.sent[1]!.options.onProgress).toBeTypeOf('function');
    expect(transport.sent[1]!.options.onLog).toBeUndefined();
    caps = new Set(['streaming', 'log']);
    await send(call({ onProgress: undefined }));
    expect(transport.sent[2]!.options).toMatchObject({ stream: true, onProgress: undefined });
    expect(transport.sent[2]!.options.onLog).toBeTypeOf('function');
  });
});
