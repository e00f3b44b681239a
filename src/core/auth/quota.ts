/**
 * Per-principal quotas (§15.5: per-client rate limits and caps): a token bucket per quota key
 * (rate over time) and a count of requests in flight per quota key (concurrency). The rate store
 * is an interface: this process by default (below), or Redis shared by every replica
 * (src/node/auth/redis-limiter.ts). Concurrency is always counted per replica.
 */
import type { RateSettings } from './config.js';

export type RateDecision = { ok: true } | { ok: false; retryAfterMs: number };

export interface RateLimiter {
  /** Take one token from `key`'s bucket. */
  take(key: string, rate: RateSettings): Promise<RateDecision>;
  close?(): Promise<void>;
}

/** The bucket size: `burst`, else one second's worth of tokens (at least one). */
export function bucketSize(rate: RateSettings): number {
  return rate.burst ?? Math.max(1, Math.ceil(rate.ratePerSec));
}

interface Bucket {
  tokens: number;
  at: number;
}

/** Buckets kept before full ones are forgotten (a full bucket is the same as no bucket). */
const MAX_BUCKETS = 10_000;

/** The in-process token bucket: exact, and free of I/O. */
export class TokenBucketLimiter implements RateLimiter {
  private readonly buckets = new Map<string, Bucket>();

  constructor(private readonly now: () => number = () => performance.now()) {}

  take(key: string, rate: RateSettings): Promise<RateDecision> {
    return Promise.resolve(this.takeNow(key, rate));
  }

  takeNow(key: string, rate: RateSettings): RateDecision {
    const now = this.now();
    const size = bucketSize(rate);
    const bucket = this.buckets.get(key) ?? { tokens: size, at: now };
    bucket.tokens = Math.min(size, bucket.tokens + ((now - bucket.at) / 1000) * rate.ratePerSec);
    bucket.at = now;
    if (!this.buckets.has(key)) {
      if (this.buckets.size >= MAX_BUCKETS) this.forgetFull(now, rate);
      this.buckets.set(key, bucket);
    }
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return { ok: true };
    }
    return { ok: false, retryAfterMs: Math.ceil(((1 - bucket.tokens) / rate.ratePerSec) * 1000) };
  }

  private forgetFull(now: number, rate: RateSettings): void {
    for (const [key, bucket] of this.buckets) {
      if (bucket.tokens + ((now - bucket.at) / 1000) * rate.ratePerSec >= bucketSize(rate)) this.buckets.delete(key);
    }
  }
}

/** How long a client refused for concurrency should wait: requests turn over in well under a second. */
export const CONCURRENCY_RETRY_AFTER_MS = 250;

/** Requests in flight per quota key. */
export class ConcurrencyCounter {
  private readonly counts = new Map<string, number>();

  /** A release function, or undefined when `key` already has `max` in flight. */
  tryEnter(key: string, max: number): (() => void) | undefined {
    const count = this.counts.get(key) ?? 0;
    if (count >= max) return undefined;
    this.counts.set(key, count + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.counts.get(key) ?? 1) - 1;
      if (left <= 0) this.counts.delete(key);
      else this.counts.set(key, left);
    };
  }

  inFlight(key: string): number {
    return this.counts.get(key) ?? 0;
  }
}
