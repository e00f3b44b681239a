/**
 * What the console shows, derived from two samples of cumulative counters: rates per second,
 * error shares and latency quantiles over the interval between them. Pure.
 */
import type { EngineSample, Sample } from './sample.js';

export interface EngineRates {
  requestsPerSec: number;
  /** Share of calls that failed (any non-zero code), 0–1. */
  errorRate: number;
  /** Failed legs per second by failure class (timeout, circuit-open, transport, …). */
  failuresPerSec: Record<string, number>;
  /** Latency quantiles over the interval, ms; null when no call finished in it. */
  p50: number | null;
  p95: number | null;
  p99: number | null;
  retriesPerSec: number;
  retryDeniedPerSec: number;
  shedsPerSec: number;
}

export interface FederationRates {
  requestsPerSec: number;
  errorsPerSec: number;
  /** Successful answers that left an engine out, as a share of successful answers. */
  degradedShare: number;
  deadlineHitsPerSec: number;
  /** Requests answered "rate limited" (-32011: the gateway's own 429s included). */
  rateLimitedPerSec: number;
  retriesPerSec: number;
  retryDeniedPerSec: number;
  progressFramesPerSec: number;
}

const RATE_LIMITED = '-32011';

function sum(record: Record<string, number>): number {
  let total = 0;
  for (const key in record) total += record[key]!;
  return total;
}

function delta(now: number, before: number | undefined): number {
  // A counter that went down was reset (its engine was replaced by a reload): count from zero.
  return now >= (before ?? 0) ? now - (before ?? 0) : now;
}

function deltas(now: Record<string, number>, before: Record<string, number> | undefined): Record<string, number> {
  const out: Record<string, number> = {};
  for (const key in now) {
    const d = delta(now[key]!, before?.[key]);
    if (d > 0) out[key] = d;
  }
  return out;
}

/** Prometheus `histogram_quantile`: linear interpolation inside the bucket the rank falls in. */
export function histogramQuantile(q: number, bounds: readonly number[], cumulative: readonly number[]): number | null {
  const total = cumulative[cumulative.length - 1] ?? 0;
  if (total <= 0) return null;
  const rank = q * total;
  for (let i = 0; i < bounds.length; i++) {
    if (cumulative[i]! < rank) continue;
    const upper = bounds[i]!;
    const lower = i === 0 ? 0 : bounds[i - 1]!;
    if (upper === Infinity) return lower; // beyond the last finite bound: the bound is all we know
    const below = i === 0 ? 0 : cumulative[i - 1]!;
    const inBucket = cumulative[i]! - below;
    return inBucket > 0 ? lower + ((upper - lower) * (rank - below)) / inBucket : upper;
  }
  return bounds[bounds.length - 2] ?? null;
}

const ms = (seconds: number | null): number | null => (seconds === null ? null : Math.round(seconds * 10_000) / 10);

export function engineRates(now: EngineSample, before: EngineSample | undefined, seconds: number, bounds: readonly number[]): EngineRates {
  const calls = deltas(now.calls, before?.calls);
  const total = sum(calls);
  const failed = total - (calls['0'] ?? 0);
  const buckets = now.buckets.map((count, i) => delta(count, before?.buckets[i]));
  const perSec = (n: number): number => (seconds > 0 ? n / seconds : 0);
  const failures: Record<string, number> = {};
  for (const [reason, n] of Object.entries(deltas(now.degraded, before?.degraded))) failures[reason] = perSec(n);
  return {
    requestsPerSec: perSec(total),
    errorRate: total > 0 ? failed / total : 0,
    failuresPerSec: failures,
    p50: ms(histogramQuantile(0.5, bounds, buckets)),
    p95: ms(histogramQuantile(0.95, bounds, buckets)),
    p99: ms(histogramQuantile(0.99, bounds, buckets)),
    retriesPerSec: perSec(delta(now.retries, before?.retries)),
    retryDeniedPerSec: perSec(delta(now.retryDenied, before?.retryDenied)),
    shedsPerSec: perSec(delta(now.sheds, before?.sheds)),
  };
}

export function federationRates(now: Sample, before: Sample | undefined): FederationRates {
  const seconds = before ? (now.at - before.at) / 1000 : 0;
  const perSec = (n: number): number => (seconds > 0 ? n / seconds : 0);
  const requests = deltas(now.requests, before?.requests);
  const total = sum(requests);
  const ok = requests['0'] ?? 0;
  const degraded = delta(now.degradedAnswers, before?.degradedAnswers);
  let retries = 0;
  let denied = 0;
  for (const [id, engine] of Object.entries(now.engines)) {
    retries += delta(engine.retries, before?.engines[id]?.retries);
    denied += delta(engine.retryDenied, before?.engines[id]?.retryDenied);
  }
  return {
    requestsPerSec: perSec(total),
    errorsPerSec: perSec(total - ok),
    degradedShare: ok > 0 ? Math.min(1, degraded / ok) : 0,
    deadlineHitsPerSec: perSec(delta(now.cancellations.deadline ?? 0, before?.cancellations.deadline)),
    rateLimitedPerSec: perSec(requests[RATE_LIMITED] ?? 0),
    retriesPerSec: perSec(retries),
    retryDeniedPerSec: perSec(denied),
    progressFramesPerSec: perSec(delta(now.progressFrames, before?.progressFrames)),
  };
}
