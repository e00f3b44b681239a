/**
 * The limits a shadow arm runs under, per experiment and per replica: at most `maxConcurrent`
 * shadow runs in flight, and a token bucket of `budgetPerMinute` runs (refilled continuously, full
 * at start). A sampled request the gate refuses simply skips its shadow run (counted as skipped),
 * so the extra upstream load is capped whatever the traffic.
 */
import type { ShadowSkip } from './hooks.js';

export interface ShadowLimits {
  maxConcurrent: number;
  budgetPerMinute: number;
}

export class ShadowGate {
  private inFlight = 0;
  private tokens: number;
  private refilledAt: number;

  constructor(
    private readonly limits: ShadowLimits,
    now: number,
  ) {
    this.tokens = limits.budgetPerMinute;
    this.refilledAt = now;
  }

  /** Take a slot and a token, or say why not. `now` is in ms on any monotonic clock. */
  tryAcquire(now: number): 'ok' | ShadowSkip {
    this.refill(now);
    if (this.inFlight >= this.limits.maxConcurrent) return 'concurrency';
    if (this.tokens < 1) return 'budget';
    this.tokens -= 1;
    this.inFlight++;
    return 'ok';
  }

  /** The shadow run finished (answered, failed or timed out). */
  release(): void {
    this.inFlight = Math.max(0, this.inFlight - 1);
  }

  get running(): number {
    return this.inFlight;
  }

  private refill(now: number): void {
    const { budgetPerMinute } = this.limits;
    const elapsed = Math.max(0, now - this.refilledAt);
    this.tokens = Math.min(budgetPerMinute, this.tokens + (elapsed * budgetPerMinute) / 60_000);
    this.refilledAt = now;
  }
}
