/**
 * The console's arithmetic over counter samples: histogram quantiles as Prometheus computes them,
 * rates per second, error shares, failure classes, counter resets, and the sampler's timer that
 * runs only while someone watches.
 */
import { Counter, Registry } from 'prom-client';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { engineRates, federationRates, histogramQuantile } from '../../src/node/console/derive.js';
import type { EngineSample, Sample } from '../../src/node/console/sample.js';
import { Sampler } from '../../src/node/console/sampler.js';

const BOUNDS = [0.01, 0.1, 1, Infinity];

const engine = (over: Partial<EngineSample> = {}): EngineSample => ({
  calls: {},
  buckets: [0, 0, 0, 0],
  degraded: {},
  sheds: 0,
  retries: 0,
  retryDenied: 0,
  ...over,
});

const sample = (at: number, over: Partial<Sample> = {}): Sample => ({
  at,
  bounds: BOUNDS,
  requests: {},
  degradedAnswers: 0,
  cancellations: {},
  progressFrames: 0,
  sseOpen: 0,
  inFlight: 0,
  engines: {},
  ...over,
});

describe('histogramQuantile', () => {
  it('interpolates inside the bucket the rank falls in', () => {
    // 10 calls ≤ 10 ms, 10 more ≤ 100 ms: the median is the 10 ms bound, p75 halfway into the second bucket.
    expect(histogramQuantile(0.5, BOUNDS, [10, 20, 20, 20])).toBeCloseTo(0.01, 12);
    expect(histogramQuantile(0.75, BOUNDS, [10, 20, 20, 20])).toBeCloseTo(0.055, 12);
  });
  it('answers the last finite bound past it, and null without observations', () => {
    expect(histogramQuantile(0.99, BOUNDS, [0, 0, 0, 5])).toBe(1);
    expect(histogramQuantile(0.5, BOUNDS, [0, 0, 0, 0])).toBeNull();
  });
});

describe('rates between two samples', () => {
  it('per engine: requests/s, error share, failure classes, latency in ms', () => {
    const before = engine({ calls: { '0': 10 }, buckets: [10, 10, 10, 10], degraded: { timeout: 1 } });
    const now = engine({ calls: { '0': 18, '-32014': 2 }, buckets: [10, 20, 20, 20], degraded: { timeout: 3 }, retries: 4 });
    const r = engineRates(now, before, 2, BOUNDS);
    expect(r.requestsPerSec).toBe(5);
    expect(r.errorRate).toBe(0.2);
    expect(r.failuresPerSec).toEqual({ timeout: 1 });
    expect(r.p50).toBeCloseTo(55, 6);
    expect(r.retriesPerSec).toBe(2);
  });

  it('a counter that went down was reset: it counts from zero', () => {
    const r = engineRates(engine({ calls: { '0': 3 } }), engine({ calls: { '0': 100 } }), 1, BOUNDS);
    expect(r.requestsPerSec).toBe(3);
  });

  it('federation: requests/s, degraded share of successes, deadline hits, 429s', () => {
    const before = sample(1_000, { requests: { '0': 10 } });
    const now = sample(3_000, {
      requests: { '0': 30, '-32011': 4, '-32602': 2 },
      degradedAnswers: 5,
      cancellations: { deadline: 2 },
    });
    const r = federationRates(now, before);
    expect(r.requestsPerSec).toBe(13);
    expect(r.errorsPerSec).toBe(3);
    expect(r.degradedShare).toBe(0.25);
    expect(r.deadlineHitsPerSec).toBe(1);
    expect(r.rateLimitedPerSec).toBe(2);
  });
});

describe('Sampler', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('runs no timer until someone watches, one sample a second while they do, none after', async () => {
    vi.useFakeTimers();
    const registry = new Registry();
    const calls = new Counter({ name: 'rcpgw_engine_calls_total', help: 'calls', labelNames: ['engine', 'code'], registers: [registry] });
    const sampler = new Sampler(registry, () => ['a']);
    expect(sampler.watching).toBe(false);
    expect(vi.getTimerCount()).toBe(0);
    const seen: Sample[] = [];
    const stop = sampler.watch((s) => seen.push(s));
    expect(sampler.watching).toBe(true);
    calls.labels('a', '0').inc(3);
    await vi.advanceTimersByTimeAsync(3_000);
    expect(seen).toHaveLength(3);
    expect(seen[2]!.engines.a!.calls).toEqual({ '0': 3 });
    stop();
    expect(sampler.watching).toBe(false);
    expect(vi.getTimerCount()).toBe(0);
    await vi.advanceTimersByTimeAsync(5_000);
    expect(seen).toHaveLength(3);
    expect(sampler.samples).toHaveLength(3);
  });
});
