/**
 * The resilience building blocks on their own, with the real code (opossum underneath the
 * breaker): circuit breaker (on fake timers: a reset passes when the test moves the clock, never
 * on the wall clock), retry budget and retry layer, admission gate, and the NDJSON splitter's
 * bound on hostile lines.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type CircuitBreaker from 'opossum';
import { EngineBreaker, type BreakerState, type TransitionInfo } from '../../src/core/resilience/breaker.js';
import { UpstreamError } from '../../src/core/upstream/errors.js';
import { RetryBudget, withRetry, type RetryDecision, type RetryGuard } from '../../src/core/resilience/retry.js';
import { AdmissionGate, InFlightRegistry } from '../../src/core/session/admission.js';
import { LineSplitter } from '../../src/core/protocol/ndjson.js';
import type { BreakerSettings } from '../../src/core/config/schema.js';

const fault = (retryAfterMs?: number): UpstreamError =>
  new UpstreamError('remote-error', 'internal', { code: -32603, message: 'internal' }, retryAfterMs);
const callerError = (code: number): UpstreamError => new UpstreamError('remote-error', 'caller', { code, message: 'caller' });
const aborted = (): UpstreamError => new UpstreamError('aborted', 'aborted');

interface Harness {
  breaker: EngineBreaker;
  transitions: Array<{ from: BreakerState; to: BreakerState; info: TransitionInfo }>;
  next(to: BreakerState): Promise<TransitionInfo>;
}

function harness(overrides: Partial<BreakerSettings> = {}): Harness {
  const settings: BreakerSettings = {
    errorThresholdPercentage: 50,
    rollingWindowMs: 10_000,
    rollingBuckets: 10,
    volumeThreshold: 5,
    resetTimeoutMs: 40,
    maxResetTimeoutMs: 60_000,
    ...overrides,
  };
  const transitions: Harness['transitions'] = [];
  const waiters: Array<{ to: BreakerState; resolve: (info: TransitionInfo) => void }> = [];
  const breaker = new EngineBreaker(settings, {
    onTransition: (from, to, info) => {
      transitions.push({ from, to, info });
      for (const w of waiters.filter((x) => x.to === to)) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve(info);
      }
    },
  });
  return { breaker, transitions, next: (to) => new Promise((resolve) => waiters.push({ to, resolve })) };
}

async function failWith(breaker: EngineBreaker, err: unknown, times = 1): Promise<void> {
  for (let i = 0; i < times; i++) await breaker.fire(() => Promise.reject(err)).catch(() => undefined);
}

async function openIt(h: Harness, volume = 5): Promise<TransitionInfo> {
  const opened = h.next('open');
  await failWith(h.breaker, fault(), volume);
  return opened;
}

/** Move the fake clock past the open breaker's reset; resolves once it went half-open. */
async function halfOpen(h: Harness): Promise<void> {
  const next = h.next('half-open');
  const retryInMs = h.breaker.snapshot().retryInMs;
  expect(retryInMs).toBeGreaterThan(0);
  await vi.advanceTimersByTimeAsync(retryInMs! - 1);
  expect(h.breaker.currentState).toBe('open');
  await vi.advanceTimersByTimeAsync(2);
  await next;
}

describe('circuit breaker', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('stays closed below the minimum volume and opens once it is reached', async () => {
    const h = harness({ volumeThreshold: 5 });
    await failWith(h.breaker, fault(), 4);
    expect(h.breaker.currentState).toBe('closed');
    await failWith(h.breaker, fault());
    expect(h.breaker.currentState).toBe('open');
    h.breaker.shutdown();
  });

  it("never counts the caller's own errors, and aborts count for nothing at all", async () => {
    const h = harness({ volumeThreshold: 3 });
    for (const code of [-32602, -32005, -32003, -32004, -32602, -32005]) await failWith(h.breaker, callerError(code));
    await failWith(h.breaker, aborted(), 10);
    expect(h.breaker.currentState).toBe('closed');
    // Were the 10 aborts counted as successes, 3 faults in 19 calls would stay under 50 %.
    const h2 = harness({ volumeThreshold: 3 });
    await failWith(h2.breaker, aborted(), 10);
    await failWith(h2.breaker, fault(), 3);
    expect(h2.breaker.currentState).toBe('open');
    h.breaker.shutdown();
    h2.breaker.shutdown();
  });

  it('counts every plain success in the rolling window, as opossum counts its own fire()', async () => {
    const h = harness({ volumeThreshold: 3 });
    for (let i = 0; i < 6; i++) await expect(h.breaker.fire(() => Promise.resolve(i))).resolves.toBe(i);
    // 3 faults in 9 calls: 33 %, under the 50 % threshold (uncounted successes would make it 100 %).
    await failWith(h.breaker, fault(), 3);
    expect(h.breaker.currentState).toBe('closed');
    // 6 faults in 12: 50 %, at the threshold: still closed (opossum opens above it).
    await failWith(h.breaker, fault(), 3);
    expect(h.breaker.currentState).toBe('closed');
    // 7 in 13: 54 %: open.
    await failWith(h.breaker, fault());
    expect(h.breaker.currentState).toBe('open');
    h.breaker.shutdown();
  });

  it("keeps nothing per plain success in opossum's window but the count it decides by", async () => {
    const h = harness();
    for (let i = 0; i < 200; i++) await h.breaker.fire(() => Promise.resolve(i));
    // opossum's own window (its public `status.window`, one object per bucket): the calls counted
    // as fires, and no latency entry kept per call (opossum 9 pushes one per 'success').
    const buckets = (h.breaker as unknown as { circuit: CircuitBreaker }).circuit.status.window;
    expect(buckets.reduce((sum, bucket) => sum + bucket.fires, 0)).toBe(200);
    expect(buckets.reduce((sum, bucket) => sum + bucket.latencyTimes.length, 0)).toBe(0);
    h.breaker.shutdown();
  });

  it('refuses at once while open, without calling the engine', async () => {
    const h = harness();
    await openIt(h);
    let called = 0;
    const err = await h.breaker
      .fire(async () => {
        called++;
        return 1;
      })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UpstreamError);
    expect((err as UpstreamError).reason).toBe('circuit-open');
    expect(called).toBe(0);
    expect(h.breaker.snapshot().retryInMs).toBeGreaterThanOrEqual(0);
    h.breaker.shutdown();
  });

  it('half-open admits exactly one trial; its success closes the breaker', async () => {
    const h = harness();
    await openIt(h);
    await halfOpen(h);
    let release!: () => void;
    let trialCalls = 0;
    const trial = h.breaker.fire(() => {
      trialCalls++;
      return new Promise<string>((r) => {
        release = () => r('ok');
      });
    });
    expect(h.breaker.admits).toBe(false);
    let others = 0;
    const second = await h.breaker
      .fire(async () => {
        others++;
        return 'x';
      })
      .catch((e: unknown) => e);
    expect((second as UpstreamError).reason).toBe('circuit-open');
    expect(others).toBe(0);
    release();
    expect(await trial).toBe('ok');
    expect(trialCalls).toBe(1);
    expect(h.breaker.currentState).toBe('closed');
    h.breaker.shutdown();
  });

  it('an aborted trial leaves the breaker half-open for the next caller', async () => {
    const h = harness();
    await openIt(h);
    await halfOpen(h);
    await failWith(h.breaker, aborted());
    expect(h.breaker.currentState).toBe('half-open');
    expect(h.breaker.admits).toBe(true);
    // A caller error proves the engine alive: it closes the breaker.
    await failWith(h.breaker, callerError(-32602));
    expect(h.breaker.currentState).toBe('closed');
    h.breaker.shutdown();
  });

  it('the reset timeout grows per consecutive opening (jittered, capped) and resets after recovery', async () => {
    const h = harness({ resetTimeoutMs: 20, maxResetTimeoutMs: 70 });
    const first = await openIt(h);
    expect(first.resetTimeoutMs).toBeGreaterThanOrEqual(16);
    expect(first.resetTimeoutMs).toBeLessThanOrEqual(24);
    await halfOpen(h);
    let reopened = h.next('open');
    await failWith(h.breaker, fault());
    const second = await reopened;
    expect(second.openings).toBe(2);
    expect(second.resetTimeoutMs).toBeGreaterThanOrEqual(32);
    expect(second.resetTimeoutMs).toBeLessThanOrEqual(48);
    await halfOpen(h);
    reopened = h.next('open');
    await failWith(h.breaker, fault());
    const third = await reopened;
    // 80 capped at 70, ±20 % jitter, never above the cap.
    expect(third.resetTimeoutMs).toBeLessThanOrEqual(70);
    expect(third.resetTimeoutMs).toBeGreaterThanOrEqual(56);
    await halfOpen(h);
    await h.breaker.fire(async () => 'ok');
    expect(h.breaker.currentState).toBe('closed');
    expect(h.breaker.consecutiveOpenings).toBe(0);
    const again = await openIt(h);
    expect(again.openings).toBe(1);
    expect(again.resetTimeoutMs).toBeLessThanOrEqual(24);
    h.breaker.shutdown();
  });

  it("honours the engine's retryAfterMs (capped at maxResetTimeoutMs)", async () => {
    const h = harness({ resetTimeoutMs: 20, maxResetTimeoutMs: 60_000 });
    const opened = h.next('open');
    await failWith(h.breaker, fault(), 4);
    await failWith(h.breaker, fault(5_000));
    expect((await opened).resetTimeoutMs).toBeGreaterThanOrEqual(5_000);
    expect(h.breaker.snapshot().retryInMs).toBeGreaterThan(4_000);
    h.breaker.shutdown();
    const capped = harness({ resetTimeoutMs: 20, maxResetTimeoutMs: 300 });
    const cappedOpen = capped.next('open');
    await failWith(capped.breaker, fault(3_600_000), 5);
    expect((await cappedOpen).resetTimeoutMs).toBe(300);
    capped.breaker.shutdown();
  });

  it('closing starts a fresh window: the failures that opened it do not count again', async () => {
    const h = harness();
    await openIt(h);
    await halfOpen(h);
    await h.breaker.fire(async () => 'ok');
    expect(h.breaker.currentState).toBe('closed');
    await failWith(h.breaker, fault(), 4);
    expect(h.breaker.currentState).toBe('closed');
    h.breaker.shutdown();
  });

  it('a call admitted before the breaker opened does not decide the half-open trial', async () => {
    const h = harness();
    let finishSlow!: () => void;
    const slow = h.breaker.fire(
      () =>
        new Promise<string>((r) => {
          finishSlow = () => r('late');
        }),
    );
    await openIt(h);
    await halfOpen(h);
    finishSlow();
    expect(await slow).toBe('late');
    expect(h.breaker.currentState).toBe('half-open');
    h.breaker.shutdown();
  });
});

describe('retry budget', () => {
  it('allows minPerWindow retries on a quiet gateway, then refuses', () => {
    const budget = new RetryBudget({ budgetRatio: 0.1, minPerWindow: 3, windowMs: 1_000 }, () => 0);
    expect([1, 2, 3, 4].map(() => budget.tryAcquire())).toEqual([true, true, true, false]);
  });

  it('caps retries at budgetRatio of the calls in the window, and the window slides', () => {
    let now = 0;
    const budget = new RetryBudget({ budgetRatio: 0.1, minPerWindow: 10, windowMs: 1_000 }, () => now);
    for (let i = 0; i < 1_000; i++) budget.recordCall();
    let granted = 0;
    while (budget.tryAcquire()) granted++;
    expect(granted).toBe(100);
    expect(budget.snapshot()).toEqual({ calls: 1_000, retries: 100, allowed: 100 });
    now = 1_500; // the whole window has passed
    expect(budget.snapshot()).toEqual({ calls: 0, retries: 0, allowed: 10 });
    expect(budget.tryAcquire()).toBe(true);
  });
});

describe('retry layer', () => {
  const guard = (over: Partial<RetryGuard> = {}): RetryGuard & { decisions: RetryDecision[] } => {
    const decisions: RetryDecision[] = [];
    return {
      method: 'retrieve',
      deadlineAt: performance.now() + 5_000,
      signal: new AbortController().signal,
      budget: new RetryBudget({ budgetRatio: 0.1, minPerWindow: 10, windowMs: 10_000 }),
      reserveMs: 10,
      backoffMs: 1,
      onDecision: (d) => decisions.push(d),
      decisions,
      ...over,
    };
  };
  const failing = (errs: unknown[]): { attempt: () => Promise<string>; calls: () => number } => {
    let n = 0;
    return {
      attempt: () => {
        const err = errs[n++];
        return err === undefined ? Promise.resolve('ok') : Promise.reject(err);
      },
      calls: () => n,
    };
  };

  it('retries a retryable failure of a read method once', async () => {
    const g = guard();
    const once = failing([fault()]);
    expect(await withRetry(once.attempt, g)).toBe('ok');
    expect(once.calls()).toBe(2);
    const twice = failing([fault(), new UpstreamError('timeout', 't')]);
    await expect(withRetry(twice.attempt, g)).rejects.toMatchObject({ reason: 'timeout' });
    expect(twice.calls()).toBe(2);
    expect(g.decisions.map((d) => d.kind)).toEqual(['retry', 'retry']);
  });

  it('never retries writes, caller errors, refusals, aborts or malformed answers', async () => {
    const cases: Array<[string, unknown]> = [
      ['index/add', fault()],
      ['retrieve', callerError(-32602)],
      ['retrieve', new UpstreamError('circuit-open', 'open')],
      ['retrieve', new UpstreamError('queue-full', 'full')],
      ['retrieve', new UpstreamError('not-ready', 'down')],
      ['retrieve', new UpstreamError('crashed', 'exited')],
      ['retrieve', aborted()],
      ['retrieve', new UpstreamError('malformed', 'bad')],
    ];
    for (const [method, err] of cases) {
      const g = guard({ method });
      const f = failing([err]);
      await expect(withRetry(f.attempt, g)).rejects.toBe(err);
      expect(f.calls()).toBe(1);
      expect(g.decisions).toEqual([]);
    }
  });

  it('waits retryAfterMs, and skips the retry when that wait does not fit the deadline', async () => {
    const g = guard({ deadlineAt: performance.now() + 200 });
    const f = failing([fault(10_000)]);
    await expect(withRetry(f.attempt, g)).rejects.toBeInstanceOf(UpstreamError);
    expect(f.calls()).toBe(1);
    expect(g.decisions).toMatchObject([{ kind: 'skipped', why: 'deadline' }]);
    const g2 = guard();
    const f2 = failing([new UpstreamError('remote-error', 'rl', { code: -32011, message: 'rl' }, 30)]);
    expect(await withRetry(f2.attempt, g2)).toBe('ok');
    expect(g2.decisions).toMatchObject([{ kind: 'retry', waitMs: 30 }]);
  });

  it('stops retrying when the gateway-wide budget is spent', async () => {
    const budget = new RetryBudget({ budgetRatio: 0, minPerWindow: 2, windowMs: 60_000 });
    const g = guard({ budget });
    let attempts = 0;
    for (let i = 0; i < 5; i++) {
      await withRetry(() => {
        attempts++;
        return Promise.reject(fault());
      }, g).catch(() => undefined);
    }
    expect(attempts).toBe(5 + 2);
    expect(g.decisions.filter((d) => d.kind === 'skipped').length).toBe(3);
  });
});

describe('admission gate', () => {
  it('caps requests in flight, releases once, refuses while draining, reports idle', async () => {
    const gate = new AdmissionGate(2);
    const a = gate.tryEnter();
    const b = gate.tryEnter();
    const c = gate.tryEnter();
    expect([a.ok, b.ok, c.ok]).toEqual([true, true, false]);
    if (!c.ok) expect(c.retryAfterMs).toBeGreaterThan(0);
    if (a.ok) {
      a.release();
      a.release();
    }
    expect(gate.inFlight).toBe(1);
    gate.drain();
    expect(gate.tryEnter().ok).toBe(false);
    expect(await gate.idle(10)).toBe(false);
    const idle = gate.idle(5_000);
    if (b.ok) b.release();
    expect(await idle).toBe(true);
  });

  it('the in-flight registry answers every listed session on shutdown', () => {
    const registry = new InFlightRegistry();
    const failed: Array<[number, string]> = [];
    const session = { failAll: (code: number, message: string) => failed.push([code, message]) };
    registry.add(session);
    registry.add(session);
    registry.failAll();
    expect(failed).toEqual([[-32010, 'server is shutting down']]);
  });
});

describe('NDJSON splitter bound', () => {
  it('drops an oversized line whole (its tail is not read as a line) and resumes after it', () => {
    const lines: string[] = [];
    let oversize = 0;
    const splitter = new LineSplitter(
      (l) => lines.push(l),
      16,
      () => oversize++,
    );
    splitter.push('{"a":1}\n' + 'x'.repeat(10));
    splitter.push('y'.repeat(10));
    splitter.push('z'.repeat(5) + '\n{"b":2}\n');
    splitter.push('q'.repeat(20) + '\n{"c":3}\n');
    expect(lines).toEqual(['{"a":1}', '{"b":2}', '{"c":3}']);
    expect(oversize).toBe(2);
  });
});
