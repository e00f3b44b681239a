/**
 * Each layer of the upstream pipeline on its own, around a recording stand-in for the rest of
 * the pipeline; fake timers (and a fake `performance.now()`) wherever time matters.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { breakerLayer, EngineBreaker, type BreakerState } from '../../src/core/resilience/breaker.js';
import { deadlineLayer } from '../../src/core/resilience/deadline.js';
import { failFastLayer } from '../../src/core/resilience/fail-fast.js';
import { Limiter } from '../../src/core/resilience/limiter.js';
import { RetryBudget, retryLayer, type RetryDecision, type RetryPolicy } from '../../src/core/resilience/retry.js';
import { UpstreamError } from '../../src/core/upstream/errors.js';
import type { JsonObject } from '../../src/core/protocol/jsonrpc.js';
import { breakerSettings, deferred, recordingSend, upstreamCall } from './upstream-fakes.js';

const fault = (retryAfterMs?: number): UpstreamError =>
  new UpstreamError('remote-error', 'internal', { code: -32603, message: 'internal' }, retryAfterMs);

beforeEach(() => {
  vi.useFakeTimers();
});

afterEach(() => {
  vi.useRealTimers();
});

describe('deadline layer', () => {
  it('refuses an attempt with no time left, sending nothing', async () => {
    const send = recordingSend();
    const call = deadlineLayer(10_000)(send);
    await expect(call(upstreamCall({ deadlineAt: performance.now() }))).rejects.toMatchObject({ reason: 'timeout' });
    expect(send.calls).toHaveLength(0);
  });

  it('tells the engine a strictly smaller deadline and fixes when the attempt expires, keeping the rest of _meta', async () => {
    const send = recordingSend();
    const now = performance.now();
    await deadlineLayer(10_000)(send)(upstreamCall({ params: { query: 'q', _meta: { traceId: 't' } }, deadlineAt: now + 700 }));
    expect(send.calls[0]!.params._meta).toEqual({ traceId: 't', deadlineMs: 699 });
    expect(send.calls[0]!.expiresAt).toBe(now + 700);
  });

  it("never gives an attempt more than the engine's own timeout", async () => {
    const send = recordingSend();
    const now = performance.now();
    await deadlineLayer(250)(send)(upstreamCall({ deadlineAt: now + 5_000 }));
    expect(send.calls[0]!.expiresAt).toBe(now + 250);
    expect((send.calls[0]!.params._meta as JsonObject).deadlineMs).toBe(4_999);
  });
});

describe('fail-fast layer', () => {
  it('refuses an engine that is not ready, then an open breaker, and passes everything else on', async () => {
    const send = recordingSend();
    let notReady: UpstreamError | undefined = new UpstreamError('not-ready', 'engine is down');
    let breakerAdmits = false;
    const call = failFastLayer({
      notReady: () => notReady,
      get breakerAdmits() {
        return breakerAdmits;
      },
    })(send);
    await expect(call(upstreamCall())).rejects.toMatchObject({ reason: 'not-ready', message: 'engine is down' });
    notReady = undefined;
    await expect(call(upstreamCall())).rejects.toMatchObject({ reason: 'circuit-open' });
    expect(send.calls).toHaveLength(0);
    breakerAdmits = true;
    await expect(call(upstreamCall())).resolves.toEqual({ ok: true });
    expect(send.calls).toHaveLength(1);
  });
});

describe('limiter layer', () => {
  it('takes a free slot at once, with no timer and no abort listener', async () => {
    const limiter = new Limiter(2, 4);
    const send = recordingSend();
    const controller = new AbortController();
    const add = vi.spyOn(controller.signal, 'addEventListener');
    const answer = limiter.layer(send)(upstreamCall({ signal: controller.signal }));
    expect(vi.getTimerCount()).toBe(0);
    expect(limiter.active).toBe(1);
    await expect(answer).resolves.toEqual({ ok: true });
    expect(add).not.toHaveBeenCalled();
    expect(limiter.active).toBe(0);
  });

  it('queues behind a busy slot, sheds once the queue is full (reporting it), and runs the queued call when a slot frees', async () => {
    const shed = vi.fn();
    const limiter = new Limiter(1, 1, shed);
    const first = deferred<JsonObject>();
    const send = recordingSend((call) => (call.method === 'first' ? first.promise : Promise.resolve({ second: true })));
    const call = limiter.layer(send);
    const a = call(upstreamCall({ method: 'first' }));
    await Promise.resolve();
    const b = call(upstreamCall({ method: 'second' }));
    expect(limiter.waiting).toBe(1);
    await expect(call(upstreamCall({ method: 'third' }))).rejects.toMatchObject({ reason: 'queue-full' });
    expect(shed).toHaveBeenCalledTimes(1);
    first.resolve({ first: true });
    await expect(a).resolves.toEqual({ first: true });
    await expect(b).resolves.toEqual({ second: true });
    expect(send.calls.map((c) => c.method)).toEqual(['first', 'second']);
  });

  it("gives up on a queued call when its attempt's budget runs out, and never sends it later", async () => {
    const limiter = new Limiter(1, 8);
    const first = deferred<JsonObject>();
    const send = recordingSend((call) => (call.method === 'first' ? first.promise : Promise.resolve({})));
    const call = limiter.layer(send);
    void call(upstreamCall({ method: 'first' }));
    const queued = call(upstreamCall({ method: 'late', expiresAt: performance.now() + 100 }));
    const outcome = queued.catch((err: unknown) => err);
    await vi.advanceTimersByTimeAsync(99);
    expect(limiter.waiting).toBe(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(await outcome).toMatchObject({ reason: 'timeout' });
    first.resolve({});
    await vi.runAllTimersAsync();
    expect(send.calls.map((c) => c.method)).toEqual(['first']);
    expect(limiter.active + limiter.waiting).toBe(0);
  });

  it('rejects a queued call its caller aborts, and a call aborted before it was queued', async () => {
    const limiter = new Limiter(1, 8);
    const send = recordingSend(() => new Promise(() => undefined));
    const call = limiter.layer(send);
    void call(upstreamCall());
    const controller = new AbortController();
    const queued = call(upstreamCall({ signal: controller.signal }));
    controller.abort('cancel');
    await expect(queued).rejects.toMatchObject({ reason: 'aborted', message: 'aborted while queued' });
    await expect(call(upstreamCall({ signal: controller.signal }))).rejects.toMatchObject({
      reason: 'aborted',
      message: 'aborted before it was sent',
    });
    expect(send.calls).toHaveLength(1);
  });
});

describe('limiter layer: order and bookkeeping', () => {
  it('starts queued calls first come first served, one per freed slot', async () => {
    const limiter = new Limiter(1, 8);
    const gates = new Map<string, ReturnType<typeof deferred<JsonObject>>>();
    const send = recordingSend((call) => {
      const gate = deferred<JsonObject>();
      gates.set(call.method, gate);
      return gate.promise;
    });
    const call = limiter.layer(send);
    const answers = ['a', 'b', 'c', 'd'].map((method) => call(upstreamCall({ method })));
    expect([limiter.active, limiter.waiting]).toEqual([1, 3]);
    for (const method of ['a', 'b', 'c']) {
      gates.get(method)!.resolve({ method });
      await vi.advanceTimersByTimeAsync(0);
      expect(send.calls.at(-1)!.method).toBe(String.fromCharCode(method.charCodeAt(0) + 1));
      expect(limiter.active).toBe(1);
    }
    gates.get('d')!.resolve({ method: 'd' });
    await expect(Promise.all(answers)).resolves.toEqual([{ method: 'a' }, { method: 'b' }, { method: 'c' }, { method: 'd' }]);
    expect([limiter.active, limiter.waiting]).toEqual([0, 0]);
  });

  it('takes a call that gives up out of the queue at once, so it no longer counts against maxQueue', async () => {
    const limiter = new Limiter(1, 1);
    const send = recordingSend(() => new Promise(() => undefined));
    const call = limiter.layer(send);
    void call(upstreamCall({ method: 'busy' }));
    const controller = new AbortController();
    const queued = call(upstreamCall({ method: 'gives-up', signal: controller.signal }));
    expect(limiter.waiting).toBe(1);
    controller.abort('cancel');
    await expect(queued).rejects.toMatchObject({ reason: 'aborted' });
    expect(limiter.waiting).toBe(0);
    // The freed place in the queue takes the next call instead of shedding it.
    const next = call(upstreamCall({ method: 'next' })).catch((err: unknown) => err);
    expect(limiter.waiting).toBe(1);
    await vi.advanceTimersByTimeAsync(0);
    expect(await Promise.race([next, Promise.resolve('still queued')])).toBe('still queued');
  });

  it('frees the slot of a call whose next layer throws instead of rejecting', async () => {
    const limiter = new Limiter(1, 4);
    let throwing = true;
    const call = limiter.layer((upstream) => {
      if (throwing) throw new TypeError('a layer fault');
      return Promise.resolve({ method: upstream.method });
    });
    await expect(call(upstreamCall({ method: 'first' }))).rejects.toThrow('a layer fault');
    expect(limiter.active).toBe(0);
    throwing = false;
    await expect(call(upstreamCall({ method: 'second' }))).resolves.toEqual({ method: 'second' });
  });
});

describe('breaker layer', () => {
  const failing = (): ReturnType<typeof recordingSend> => recordingSend(() => Promise.reject(fault()));

  it('opens after the volume threshold of engine faults, then refuses without sending', async () => {
    const breaker = new EngineBreaker(breakerSettings({ volumeThreshold: 3 }));
    const send = failing();
    const call = breakerLayer(breaker)(send);
    for (let i = 0; i < 2; i++) await call(upstreamCall()).catch(() => undefined);
    expect(breaker.currentState).toBe('closed');
    await call(upstreamCall()).catch(() => undefined);
    expect(breaker.currentState).toBe('open');
    await expect(call(upstreamCall())).rejects.toMatchObject({ reason: 'circuit-open' });
    expect(send.calls).toHaveLength(3);
    breaker.shutdown();
  });

  it('half-opens once the reset timeout has passed, and a successful trial closes it', async () => {
    const transitions: BreakerState[] = [];
    const breaker = new EngineBreaker(breakerSettings({ volumeThreshold: 1, resetTimeoutMs: 1_000 }), {
      onTransition: (_from, to) => transitions.push(to),
    });
    let healthy = false;
    const call = breakerLayer(breaker)(recordingSend(() => (healthy ? Promise.resolve({ ok: true }) : Promise.reject(fault()))));
    await call(upstreamCall()).catch(() => undefined);
    expect(breaker.currentState).toBe('open');
    const retryInMs = breaker.snapshot().retryInMs!;
    // ±20 % jitter around the 1 s reset.
    expect(retryInMs).toBeGreaterThanOrEqual(800);
    expect(retryInMs).toBeLessThanOrEqual(1_200);
    await vi.advanceTimersByTimeAsync(retryInMs - 1);
    expect(breaker.currentState).toBe('open');
    await vi.advanceTimersByTimeAsync(2);
    expect(breaker.currentState).toBe('half-open');
    healthy = true;
    await expect(call(upstreamCall())).resolves.toEqual({ ok: true });
    expect(transitions).toEqual(['open', 'half-open', 'closed']);
    breaker.shutdown();
  });

  it('validates the answer inside the breaker: a malformed answer counts as a fault', async () => {
    const breaker = new EngineBreaker(breakerSettings({ volumeThreshold: 1 }));
    const call = breakerLayer(breaker)(recordingSend(() => Promise.resolve({ hits: 'nope' })));
    const validate = (result: JsonObject): void => {
      if (!Array.isArray(result.hits)) throw new UpstreamError('malformed', 'hits is not an array');
    };
    await expect(call(upstreamCall({ validate }))).rejects.toMatchObject({ reason: 'malformed' });
    expect(breaker.currentState).toBe('open');
    breaker.shutdown();
  });
});

describe('retry layer', () => {
  const policy = (over: Partial<RetryPolicy> = {}): RetryPolicy & { decisions: RetryDecision[] } => {
    const decisions: RetryDecision[] = [];
    return {
      budget: new RetryBudget({ budgetRatio: 0.1, minPerWindow: 10, windowMs: 10_000 }),
      backoffMs: 0,
      onDecision: (d) => decisions.push(d),
      decisions,
      ...over,
    };
  };
  const flaky = (failures: number): ReturnType<typeof recordingSend> => {
    let n = 0;
    return recordingSend(() => (n++ < failures ? Promise.reject(fault()) : Promise.resolve({ attempt: n })));
  };

  it('sends a call without a policy exactly once', async () => {
    const send = flaky(1);
    await expect(retryLayer(send)(upstreamCall())).rejects.toMatchObject({ reason: 'remote-error' });
    expect(send.calls).toHaveLength(1);
  });

  it('retries a retryable failure of a read once, spending the budget and reporting the decision', async () => {
    const retry = policy();
    const send = flaky(1);
    await expect(retryLayer(send)(upstreamCall({ retry }))).resolves.toEqual({ attempt: 2 });
    expect(retry.decisions).toMatchObject([{ kind: 'retry', waitMs: 0 }]);
    expect(retry.budget!.snapshot()).toMatchObject({ calls: 1, retries: 1 });
  });

  it('retries at most once, and not at all once the budget is spent', async () => {
    const budget = new RetryBudget({ budgetRatio: 0, minPerWindow: 1, windowMs: 60_000 });
    const retry = policy({ budget });
    const always = flaky(Infinity);
    await expect(retryLayer(always)(upstreamCall({ retry }))).rejects.toBeInstanceOf(UpstreamError);
    expect(always.calls).toHaveLength(2);
    await expect(retryLayer(always)(upstreamCall({ retry }))).rejects.toBeInstanceOf(UpstreamError);
    expect(always.calls).toHaveLength(3);
    expect(retry.decisions.map((d) => (d.kind === 'retry' ? 'retry' : d.why))).toEqual(['retry', 'budget']);
  });

  it('repeats a write only when the caller showed it idempotent', async () => {
    const plain = flaky(1);
    await expect(retryLayer(plain)(upstreamCall({ method: 'index/add', retry: policy() }))).rejects.toBeInstanceOf(UpstreamError);
    expect(plain.calls).toHaveLength(1);
    const safe = flaky(1);
    await expect(retryLayer(safe)(upstreamCall({ method: 'index/add', retry: policy({ idempotent: true }) }))).resolves.toEqual({
      attempt: 2,
    });
  });

  it("waits the engine's retryAfterMs on the clock, and skips a retry that would not fit the deadline", async () => {
    const retry = policy();
    let n = 0;
    const send = recordingSend(() => (n++ === 0 ? Promise.reject(fault(300)) : Promise.resolve({ ok: true })));
    const answer = retryLayer(send)(upstreamCall({ retry, deadlineAt: performance.now() + 1_000 }));
    await vi.advanceTimersByTimeAsync(299);
    expect(send.calls).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1);
    await expect(answer).resolves.toEqual({ ok: true });
    const tight = policy();
    const late = recordingSend(() => Promise.reject(fault(300)));
    await expect(retryLayer(late)(upstreamCall({ retry: tight, deadlineAt: performance.now() + 310 }))).rejects.toBeInstanceOf(
      UpstreamError,
    );
    expect(late.calls).toHaveLength(1);
    expect(tight.decisions).toMatchObject([{ kind: 'skipped', why: 'deadline' }]);
  });
});
