/**
 * Hedges within the engine's concurrency cap (resilience/limiter.ts `trySpare`,
 * upstream/hedged-read.ts): a hedge takes a free slot of `maxConcurrent` or is not sent (counted
 * `capped`, no budget token spent), never passes a call waiting in the queue, and frees its slot
 * when it settles, won or lost. The replica set sits under the limiter as in an engine's pipeline.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Limiter } from '../../src/core/resilience/limiter.js';
import { ReplicaTransport } from '../../src/core/upstream/replicas.js';
import type { JsonObject } from '../../src/core/protocol/jsonrpc.js';
import { HeldTransport, deferred, recordingSend, upstreamCall } from './upstream-fakes.js';

const OPTIONS = { timeoutMs: 5_000, maxResponseBytes: 1_000_000 };

/** Two held replicas behind a limiter of `concurrency` slots, hedging after 10 ms with budget 1. */
function engine(concurrency: number, maxQueue = 8) {
  const limiter = new Limiter(concurrency, maxQueue);
  const replicas = [new HeldTransport(), new HeldTransport()];
  const set = new ReplicaTransport(replicas, {
    now: () => Date.now(),
    random: () => 0,
    hedge: { delayMs: 10, budget: 1 },
    spareSlot: () => limiter.trySpare(),
  });
  for (const replica of set.replicas) replica.initialized = true;
  const read = (): Promise<JsonObject> => limiter.layer((call) => set.call(call.method, call.params, OPTIONS))(upstreamCall());
  const sent = (): number => replicas.reduce((sum, r) => sum + r.sent.length, 0);
  return { limiter, replicas, set, read, sent };
}

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

describe('Limiter.trySpare', () => {
  it('gives a free slot once, none when all are taken or a call waits, and hands a freed slot to the queue', async () => {
    const limiter = new Limiter(2, 4);
    const release = limiter.trySpare()!;
    expect(limiter.active).toBe(1);
    release();
    release(); // idempotent
    expect(limiter.active).toBe(0);

    const held = deferred<JsonObject>();
    const send = recordingSend(() => held.promise);
    void limiter.layer(send)(upstreamCall());
    const spare = limiter.trySpare()!;
    expect(limiter.active).toBe(2);
    expect(limiter.trySpare()).toBeUndefined(); // all taken
    const queued = limiter.layer(recordingSend())(upstreamCall());
    expect(limiter.waiting).toBe(1);
    spare(); // the freed slot goes to the waiting call, not to another spare
    expect(limiter.waiting).toBe(0);
    await expect(queued).resolves.toEqual({ ok: true });
    held.resolve({});
  });

  it('refuses a spare while a call waits, even with a slot about to free', () => {
    const limiter = new Limiter(1, 4);
    void limiter.layer(recordingSend(() => new Promise(() => undefined)))(upstreamCall());
    void limiter.layer(recordingSend())(upstreamCall());
    expect(limiter.waiting).toBe(1);
    expect(limiter.trySpare()).toBeUndefined();
  });
});

describe('hedges within maxConcurrent', () => {
  it('does not hedge when every slot is taken, spends no budget on it, and hedges once a slot is free', async () => {
    const { read, sent, set, replicas } = engine(2);
    void read();
    void read();
    await vi.advanceTimersByTimeAsync(11);
    expect(sent()).toBe(2); // both slots held by first attempts: no hedge
    expect(set.snapshot().hedges).toMatchObject({ sent: 0, capped: 2, denied: 0 });
    // One read answers and frees its slot; a third read takes it, so its hedge finds none either.
    replicas[0]!.held[0]!.resolve({ hits: [] });
    await vi.advanceTimersByTimeAsync(0);
    const third = read();
    await vi.advanceTimersByTimeAsync(11);
    expect(set.snapshot().hedges).toMatchObject({ sent: 0, capped: 3 });
    for (const r of replicas) for (const held of r.held) held.resolve({ hits: [] });
    await third;
    // Now one read alone: its hedge takes the free slot (the two capped ones left the budget its tokens).
    void read();
    await vi.advanceTimersByTimeAsync(11);
    expect(set.snapshot().hedges).toMatchObject({ sent: 1, capped: 3, denied: 0 });
  });

  it('frees the hedge slot when the hedge loses (aborted) and when it wins', async () => {
    const { read, limiter, replicas } = engine(4);
    const first = read();
    await vi.advanceTimersByTimeAsync(11);
    expect(limiter.active).toBe(2); // the read and its hedge
    replicas[0]!.held[0]!.resolve({ hits: ['first'] }); // the first attempt wins; the hedge is aborted
    await expect(first).resolves.toEqual({ hits: ['first'] });
    await vi.advanceTimersByTimeAsync(0);
    expect(limiter.active).toBe(0);

    const second = read();
    await vi.advanceTimersByTimeAsync(11);
    expect(limiter.active).toBe(2);
    const hedge = replicas.flatMap((r) => r.held).at(-1)!;
    hedge.resolve({ hits: ['hedge'] }); // the hedge wins
    await expect(second).resolves.toEqual({ hits: ['hedge'] });
    await vi.advanceTimersByTimeAsync(0);
    expect(limiter.active).toBe(0);
  });
});
