/**
 * Replica sets in process (src/core/upstream/replicas.ts, hedged-read.ts, replica.ts): fake
 * transports whose answers each test controls, on fake timers and a fake clock. Power-of-two
 * choices, ejection and the trial, failover, hedging after the delay only, the budget, writes
 * never repeated, the losing attempt aborted.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { HedgeBudget } from '../../src/core/resilience/hedge-budget.js';
import { LatencyWindow } from '../../src/core/resilience/latency.js';
import { UpstreamError } from '../../src/core/upstream/errors.js';
import { ReplicaTransport, type ReplicaTransportOptions } from '../../src/core/upstream/replicas.js';
import type { JsonObject } from '../../src/core/protocol/jsonrpc.js';
import { FakeTransport, HeldTransport } from './upstream-fakes.js';

const OPTIONS = { timeoutMs: 5_000, maxResponseBytes: 1_000_000 };

const refused = (): Promise<JsonObject> => Promise.reject(new UpstreamError('transport', 'request failed: connect ECONNREFUSED'));

/** A replica set as after the engine's initialize: every replica answered it (the late joiner has tests of its own). */
function replicaSet(children: FakeTransport[], options: ReplicaTransportOptions = {}): ReplicaTransport {
  const set = new ReplicaTransport(children, { now: () => Date.now(), ...options });
  for (const replica of set.replicas) replica.initialized = true;
  return set;
}

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

describe('power of two choices', () => {
  it('sends a read to the less loaded of the two replicas drawn', async () => {
    const [a, b, c] = [new HeldTransport(), new HeldTransport(), new FakeTransport()];
    // Draws: replica 0 then (0 + 1 + 0) % 3 = replica 1, every time.
    const set = replicaSet([a, b, c], { random: () => 0 });
    void set.call('retrieve', { query: 'q' }, OPTIONS);
    expect([a.sent.length, b.sent.length]).toEqual([1, 0]); // equal cost: the first drawn
    void set.call('retrieve', { query: 'q' }, OPTIONS);
    expect([a.sent.length, b.sent.length]).toEqual([1, 1]); // replica 0 has one in flight now
    void set.call('retrieve', { query: 'q' }, OPTIONS);
    expect([a.sent.length, b.sent.length, c.sent.length]).toEqual([2, 1, 0]); // never drawn
  });

  it('prefers the replica with the lower latency average at equal load', async () => {
    const slow = new HeldTransport();
    const fast = new FakeTransport();
    let coin = 0; // 0 draws replica 0 first, 0.5 draws replica 1 first
    const set = replicaSet([slow, fast], { random: () => coin });
    const first = set.call('retrieve', {}, OPTIONS);
    await vi.advanceTimersByTimeAsync(100);
    slow.held[0]!.resolve({ hits: [] });
    await first;
    coin = 0.5;
    await set.call('retrieve', {}, OPTIONS);
    expect(set.snapshot().replicas.map((r) => r.ewmaMs)).toEqual([100, 0]);
    coin = 0; // replica 0 drawn first from now on, and still not chosen
    for (let i = 0; i < 5; i++) await set.call('retrieve', {}, OPTIONS);
    expect([slow.sent.length, fast.sent.length]).toEqual([1, 6]);
  });
});

describe('ejection and trial', () => {
  it('ejects a replica after three transport faults in a row, then offers it one trial after the cooldown', async () => {
    const bad = new FakeTransport(refused);
    const good = new FakeTransport();
    const set = replicaSet([bad, good], { random: () => 0, replica: { cooldownMs: 1_000 } });
    for (let i = 0; i < 3; i++) await expect(set.call('retrieve', {}, OPTIONS)).resolves.toEqual({ ok: true }); // failed over
    expect(bad.sent.length).toBe(3);
    expect(set.snapshot().replicas[0]).toMatchObject({ state: 'ejected', ejections: 1, retryInMs: 1_000 });
    for (let i = 0; i < 5; i++) await set.call('retrieve', {}, OPTIONS);
    expect(bad.sent.length).toBe(3); // out of rotation

    await vi.advanceTimersByTimeAsync(1_000);
    expect(set.snapshot().replicas[0]!.state).toBe('trial');
    await set.call('retrieve', {}, OPTIONS); // the trial, failed over to the good one
    expect(bad.sent.length).toBe(4);
    expect(set.snapshot().replicas[0]).toMatchObject({ state: 'ejected', ejections: 2, retryInMs: 2_000 }); // twice as long

    await vi.advanceTimersByTimeAsync(2_000);
    bad.answer = () => Promise.resolve({ ok: 'back' });
    await expect(set.call('retrieve', {}, OPTIONS)).resolves.toEqual({ ok: 'back' });
    expect(set.snapshot().replicas[0]!.state).toBe('up');
  });

  it('never ejects for the caller’s own errors or aborts', async () => {
    const picky = new FakeTransport(() => Promise.reject(new UpstreamError('remote-error', 'bad k', { code: -32602, message: 'bad k' })));
    const set = replicaSet([picky, new FakeTransport()], { random: () => 0 });
    for (let i = 0; i < 5; i++) await expect(set.call('retrieve', {}, OPTIONS)).rejects.toMatchObject({ reason: 'remote-error' });
    expect(picky.sent.length).toBe(5); // an error answer is an answer: never failed over
    expect(set.snapshot().replicas[0]!.state).toBe('up');
  });

  it('sends initialize to every replica; one that fails it starts ejected while the engine answers', async () => {
    const down = new FakeTransport(refused);
    const up = new FakeTransport(() => Promise.resolve({ protocolVersion: 1 }));
    const set = replicaSet([down, up]);
    await expect(set.call('initialize', {}, OPTIONS)).resolves.toEqual({ protocolVersion: 1 });
    expect([down.sent.length, up.sent.length]).toEqual([1, 1]);
    expect(set.snapshot().replicas.map((r) => r.state)).toEqual(['ejected', 'up']);
    expect(set.snapshot().replicas[1]!.ewmaMs).toBeUndefined(); // a cold start says nothing of reads
    const allDown = replicaSet([new FakeTransport(refused), new FakeTransport(refused)]);
    await expect(allDown.call('initialize', {}, OPTIONS)).rejects.toMatchObject({ reason: 'transport' });
  });
});

describe('failover', () => {
  it('answers a read from another replica when the chosen one refuses the connection', async () => {
    const dead = new FakeTransport(refused);
    const alive = new FakeTransport(() => Promise.resolve({ hits: ['x'] }));
    const set = replicaSet([dead, alive], { random: () => 0 });
    await expect(set.call('retrieve', {}, OPTIONS)).resolves.toEqual({ hits: ['x'] });
    expect([dead.sent.length, alive.sent.length]).toEqual([1, 1]);
  });

  it('fails over once only', async () => {
    const set = replicaSet([new FakeTransport(refused), new FakeTransport(refused), new FakeTransport(refused)]);
    await expect(set.call('retrieve', {}, OPTIONS)).rejects.toMatchObject({ reason: 'transport' });
    expect(set.snapshot().replicas.reduce((sum, r) => sum + r.calls, 0)).toBe(2);
  });

  it('never repeats a write: index/add reaches the first replica in rotation once', async () => {
    const first = new FakeTransport(refused);
    const second = new FakeTransport();
    const set = replicaSet([first, second], { hedge: { delayMs: 10, budget: 1 } });
    await expect(set.call('index/add', { documents: [] }, OPTIONS)).rejects.toMatchObject({ reason: 'transport' });
    expect([first.sent.length, second.sent.length]).toEqual([1, 0]);
  });
});

describe('hedging', () => {
  it('sends the hedge only once the delay has passed, takes the first answer and aborts the other', async () => {
    const slow = new HeldTransport();
    const fast = new HeldTransport();
    const set = replicaSet([slow, fast], { random: () => 0, hedge: { delayMs: 50, budget: 1 } });
    const answer = set.call('retrieve', { query: 'q' }, OPTIONS);
    await vi.advanceTimersByTimeAsync(49);
    expect([slow.sent.length, fast.sent.length]).toEqual([1, 0]);
    await vi.advanceTimersByTimeAsync(1);
    expect([slow.sent.length, fast.sent.length]).toEqual([1, 1]);
    expect(fast.sent[0]!.params).toEqual({ query: 'q' });
    expect(fast.sent[0]!.options.timeoutMs).toBe(4_950); // what is left of the call's time
    fast.held[0]!.resolve({ hits: ['from-hedge'] });
    await expect(answer).resolves.toEqual({ hits: ['from-hedge'] });
    expect(slow.held[0]!.aborted()).toBe(true);
    expect(set.snapshot().hedges).toMatchObject({ sent: 1, won: 1, lost: 0 });
    expect(set.snapshot().replicas[0]!.inFlight).toBe(0);
  });

  it('counts a hedge the first attempt beat as lost, and aborts the hedge', async () => {
    const first = new HeldTransport();
    const second = new HeldTransport();
    const set = replicaSet([first, second], { random: () => 0, hedge: { delayMs: 50, budget: 1 } });
    const answer = set.call('retrieve', {}, OPTIONS);
    await vi.advanceTimersByTimeAsync(60);
    first.held[0]!.resolve({ hits: ['first'] });
    await expect(answer).resolves.toEqual({ hits: ['first'] });
    expect(second.held[0]!.aborted()).toBe(true);
    expect(set.snapshot().hedges).toMatchObject({ sent: 1, won: 0, lost: 1 });
  });

  it('keeps hedges within the budget: a share of the reads, denied beyond it', async () => {
    const slow = new HeldTransport();
    const other = new HeldTransport();
    const set = replicaSet([slow, other], { random: () => 0, hedge: { delayMs: 10, budget: 0.1 } });
    const answers: Array<Promise<JsonObject>> = [];
    for (let i = 0; i < 40; i++) {
      answers.push(set.call('retrieve', {}, OPTIONS).catch(() => ({})));
      await vi.advanceTimersByTimeAsync(11);
    }
    const { hedges } = set.snapshot();
    expect(hedges.sent).toBe(4); // 40 reads × 0.1
    expect(hedges.sent + hedges.denied).toBe(40);
    for (const held of [...slow.held, ...other.held]) held.resolve({});
    await Promise.all(answers);
  });

  it('does not hedge before the engine has an observed p95, nor a call that relays progress', async () => {
    const a = new HeldTransport();
    const b = new HeldTransport();
    const set = replicaSet([a, b], { random: () => 0, hedge: { budget: 1 } });
    void set.call('retrieve', {}, OPTIONS);
    await vi.advanceTimersByTimeAsync(4_000);
    expect(b.sent.length).toBe(0); // no delay known yet
    const progress = replicaSet([new HeldTransport(), new HeldTransport()], { hedge: { delayMs: 10, budget: 1 } });
    void progress.call('retrieve', {}, { ...OPTIONS, onProgress: () => undefined });
    await vi.advanceTimersByTimeAsync(100);
    expect(progress.snapshot().hedges.sent).toBe(0);
  });

  it('never hedges a write', async () => {
    const a = new HeldTransport();
    const b = new HeldTransport();
    const set = replicaSet([a, b], { hedge: { delayMs: 10, budget: 1 } });
    void set.call('index/delete', { ids: ['x'] }, OPTIONS);
    void set.call('memory/build', {}, OPTIONS);
    await vi.advanceTimersByTimeAsync(1_000);
    expect([a.sent.length, b.sent.length]).toEqual([2, 0]);
  });

  it('hedges after the observed p95 once enough reads were measured', async () => {
    const a = new FakeTransport();
    const b = new FakeTransport();
    const set = replicaSet([a, b], { hedge: { budget: 1 } });
    for (let i = 0; i < 20; i++) {
      const answer = set.call('retrieve', {}, OPTIONS);
      await vi.advanceTimersByTimeAsync(0);
      await answer;
    }
    expect(set.hedgeDelay()).toBe(0);
  });
});

describe('budget and latency window', () => {
  it('earns a share per read, spends one per hedge, holds at most its capacity', () => {
    const budget = new HedgeBudget(0.5, 2);
    expect(budget.tryTake()).toBe(false);
    budget.earn();
    budget.earn();
    expect(budget.tryTake()).toBe(true);
    for (let i = 0; i < 100; i++) budget.earn();
    expect(budget.available).toBe(2);
  });

  it('gives the p95 of the recent samples once it has enough', () => {
    const window = new LatencyWindow(0.95, 100, 20, 1);
    for (let i = 1; i <= 19; i++) window.record(i);
    expect(window.quantile).toBeUndefined();
    for (let i = 20; i <= 100; i++) window.record(i);
    expect(window.quantile).toBe(96);
  });
});

describe('replicas that join late or forget their initialize', () => {
  const notInitialized = (): Promise<JsonObject> =>
    Promise.reject(new UpstreamError('remote-error', 'not initialized', { code: -32001, message: 'not initialized' }));
  /** A stateful engine (§13): reads before its initialize are refused with -32001. */
  const stateful = (from: string): { transport: FakeTransport; forget: () => void } => {
    let initialized = false;
    const transport = new FakeTransport((sent) => {
      if (sent.method === 'initialize') {
        initialized = true;
        return Promise.resolve({ protocolVersion: 1 });
      }
      return initialized ? Promise.resolve({ from }) : notInitialized();
    });
    return { transport, forget: () => (initialized = false) };
  };

  it('sends initialize to a replica that missed it, at its trial, and no read before it has answered', async () => {
    const late = stateful('late');
    late.transport.answer = refused; // down while the engine starts
    const up = stateful('up');
    const set = new ReplicaTransport([late.transport, up.transport], {
      now: () => Date.now(),
      random: () => 0,
      replica: { cooldownMs: 1_000 },
    });
    await set.call('initialize', { protocolVersion: 1 }, OPTIONS);
    expect(set.snapshot().replicas.map((r) => r.state)).toEqual(['ejected', 'up']);

    await vi.advanceTimersByTimeAsync(1_000);
    late.transport.answer = stateful('late').transport.answer; // back, and not initialized
    await expect(set.call('retrieve', {}, OPTIONS)).resolves.toEqual({ from: 'up' }); // its trial is the initialize
    expect(late.transport.sent.map((sent) => sent.method)).toEqual(['initialize', 'initialize']);
    expect(late.transport.sent[1]!.params).toEqual({ protocolVersion: 1 });
    await vi.advanceTimersByTimeAsync(0);
    expect(set.snapshot().replicas[0]!.state).toBe('up');

    const answers: JsonObject[] = [];
    for (let i = 0; i < 4; i++) answers.push(await set.call('retrieve', {}, OPTIONS)); // none refused
    expect(answers).toContainEqual({ from: 'late' });
  });

  it('fails a read over when a replica answers -32001 (it restarted), and initializes it again before its next read', async () => {
    const restarted = stateful('restarted');
    const other = stateful('other');
    const set = new ReplicaTransport([restarted.transport, other.transport], {
      now: () => Date.now(),
      random: () => 0,
      replica: { cooldownMs: 1_000 },
    });
    await set.call('initialize', {}, OPTIONS);
    restarted.forget();
    await expect(set.call('retrieve', {}, OPTIONS)).resolves.toEqual({ from: 'other' }); // refused unread: failed over
    expect(set.snapshot().replicas[0]!.state).toBe('ejected');
    await expect(set.call('retrieve', {}, OPTIONS)).resolves.toEqual({ from: 'other' });

    await vi.advanceTimersByTimeAsync(1_000);
    await set.call('retrieve', {}, OPTIONS);
    await vi.advanceTimersByTimeAsync(0);
    expect(restarted.transport.sent.map((sent) => sent.method)).toEqual(['initialize', 'retrieve', 'initialize']);
    expect(set.snapshot().replicas[0]!.state).toBe('up');
    await expect(set.call('retrieve', {}, OPTIONS)).resolves.toEqual({ from: 'restarted' });
  });
});

describe('a replica that keeps refusing initialize', () => {
  it('is asked again after a cooldown that grows, even when it answers with an error (an answer, not a way back in)', async () => {
    const mismatched = new FakeTransport(() =>
      Promise.reject(new UpstreamError('remote-error', 'version', { code: -32002, message: 'version mismatch' })),
    );
    const up = new FakeTransport((sent) => Promise.resolve(sent.method === 'initialize' ? { protocolVersion: 1 } : { from: 'up' }));
    const set = new ReplicaTransport([mismatched, up], { now: () => Date.now(), random: () => 0, replica: { cooldownMs: 1_000 } });
    await set.call('initialize', {}, OPTIONS);
    expect(set.snapshot().replicas[0]).toMatchObject({ state: 'ejected', ejections: 1, retryInMs: 1_000 });
    await vi.advanceTimersByTimeAsync(1_000);
    await expect(set.call('retrieve', {}, OPTIONS)).resolves.toEqual({ from: 'up' });
    await vi.advanceTimersByTimeAsync(0);
    expect(mismatched.sent.map((sent) => sent.method)).toEqual(['initialize', 'initialize']); // never a read
    expect(set.snapshot().replicas[0]).toMatchObject({ state: 'ejected', ejections: 2, retryInMs: 2_000 });
  });
});

describe('latency estimates fade while a replica is idle', () => {
  it('tries a replica measured slow once again after a while, when only its sibling is being measured', async () => {
    let clock = 0;
    let coin = 0; // 0 draws replica 0 (slow) first, 0.5 replica 1 (fast)
    const slow = new FakeTransport(() => ((clock += 100), Promise.resolve({ from: 'slow' })));
    const fast = new FakeTransport(() => ((clock += 10), Promise.resolve({ from: 'fast' })));
    const set = new ReplicaTransport([slow, fast], { now: () => clock, random: () => coin });
    for (const replica of set.replicas) replica.initialized = true;
    await set.call('retrieve', {}, OPTIONS); // both unmeasured: the first drawn, slow (100 ms)
    coin = 0.5;
    await set.call('retrieve', {}, OPTIONS); // fast (10 ms)
    expect(set.snapshot().replicas.map((r) => r.ewmaMs)).toEqual([100, 10]);
    coin = 0; // slow drawn first from now on
    const readsOfSlow = (): number => slow.sent.length;
    for (let i = 0; i < 15; i++) {
      clock += 1_000;
      await set.call('retrieve', {}, OPTIONS);
    }
    expect(readsOfSlow()).toBe(1); // 100 ms faded by 15 s is still dearer than 10 ms
    for (let i = 0; i < 25; i++) {
      clock += 1_000;
      await set.call('retrieve', {}, OPTIONS);
    }
    expect(readsOfSlow()).toBeGreaterThan(1); // faded below its sibling's (after ~24 s), measured again
  });

  it('does not let a refused connection make a replica look fast', async () => {
    let clock = 0;
    const flaky = new FakeTransport(() => ((clock += 1), refused()));
    const steady = new FakeTransport(() => ((clock += 20), Promise.resolve({ ok: true })));
    const set = new ReplicaTransport([flaky, steady], { now: () => clock, random: () => 0 });
    for (const replica of set.replicas) replica.initialized = true;
    await set.call('retrieve', {}, OPTIONS); // flaky refuses in 1 ms, failed over to steady
    expect(set.snapshot().replicas.map((r) => r.ewmaMs)).toEqual([undefined, 20]);
  });
});
