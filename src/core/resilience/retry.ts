/**
 * The retry layer, outermost in an engine's pipeline (upstream/pipeline.ts): a failed attempt
 * may be sent again, each time through the whole pipeline (a fresh deadline, the queue, the
 * breaker). The rules, from §12.2 and the gateway's own needs:
 *
 * - only read methods (a write might have taken effect, §13.1), and writes the caller shows to be
 *   idempotent (`RetryPolicy.idempotent`: every document carries an `id`, §7.10; deletes, §7.11);
 * - only retryable failures: -32011, -32010, -32603 ("retry once"), -32014, and the transport
 *   faults that stand for them (connection reset/refused, per-call timeout). Never the caller's
 *   own errors, never a refused call (open breaker, full queue, engine down or restarting),
 *   never an abort, never a malformed or oversized answer (it would come back the same);
 * - at most one retry per leg;
 * - after the engine's `retryAfterMs` / `Retry-After` when it gave one, else a short jittered
 *   backoff, and only when that wait plus a useful attempt still fits the remaining deadline;
 * - and only while the gateway-wide retry budget allows it: retries stay within `budgetRatio`
 *   of the calls made in the last `windowMs` (with a floor of `minPerWindow`), so retries cannot
 *   multiply load on an engine that is already failing.
 *
 * No Node-only APIs: this module runs wherever the federation core runs.
 */
import { READ_METHODS } from '../protocol/methods.js';
import type { Layer } from '../upstream/call.js';
import { UpstreamError } from '../upstream/errors.js';
import type { AbortLike } from '../service/cancellation.js';

export interface RetryBudgetSettings {
  /** Retries allowed as a fraction of the calls made in the window. */
  budgetRatio: number;
  /** Retries always allowed per window, so a quiet gateway can still retry. */
  minPerWindow: number;
  windowMs: number;
}

const BUCKETS = 10;

/**
 * A sliding-window retry budget (10 buckets): `recordCall()` for every first attempt,
 * `tryAcquire()` before every retry. Memory is constant whatever the traffic.
 */
export class RetryBudget {
  private readonly calls = new Array<number>(BUCKETS).fill(0);
  private readonly retries = new Array<number>(BUCKETS).fill(0);
  private readonly bucketMs: number;
  private current = 0;
  private currentStart: number;

  constructor(
    private readonly settings: RetryBudgetSettings,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.bucketMs = Math.max(1, settings.windowMs / BUCKETS);
    this.currentStart = now();
  }

  recordCall(): void {
    this.rotate();
    this.calls[this.current]! += 1;
  }

  /** Take one retry from the budget; false when the window's allowance is spent. */
  tryAcquire(): boolean {
    this.rotate();
    const { calls, retries } = this.totals();
    if (retries >= this.allowance(calls)) return false;
    this.retries[this.current]! += 1;
    return true;
  }

  /** Calls, retries and the retry allowance in the current window (for docs, tests and metrics). */
  snapshot(): { calls: number; retries: number; allowed: number } {
    this.rotate();
    const { calls, retries } = this.totals();
    return { calls, retries, allowed: this.allowance(calls) };
  }

  private allowance(calls: number): number {
    return Math.max(this.settings.minPerWindow, Math.floor(calls * this.settings.budgetRatio));
  }

  private totals(): { calls: number; retries: number } {
    let calls = 0;
    let retries = 0;
    for (let i = 0; i < BUCKETS; i++) {
      calls += this.calls[i]!;
      retries += this.retries[i]!;
    }
    return { calls, retries };
  }

  /** Advance to the bucket that holds `now`, clearing every bucket skipped on the way. */
  private rotate(): void {
    const elapsed = Math.floor((this.now() - this.currentStart) / this.bucketMs);
    if (elapsed <= 0) return;
    for (let step = 1; step <= Math.min(elapsed, BUCKETS); step++) {
      const index = (this.current + step) % BUCKETS;
      this.calls[index] = 0;
      this.retries[index] = 0;
    }
    this.current = (this.current + elapsed) % BUCKETS;
    this.currentStart += elapsed * this.bucketMs;
  }
}

/** What the retry layer decided about a failed first attempt (for `usage.notes` and metrics). */
export type RetryDecision =
  { kind: 'retry'; waitMs: number; error: UpstreamError } | { kind: 'skipped'; why: 'budget' | 'deadline'; error: UpstreamError };

export interface RetryGuard {
  method: string;
  /** A write the caller showed to be safe to repeat (§7.10: every document has an `id`; §7.11). */
  idempotent?: boolean;
  /** Absolute deadline on the `performance.now()` clock. */
  deadlineAt: number;
  /** The caller's signal: no retry (and no wait) after an abort. */
  signal?: AbortLike;
  /** The gateway-wide budget; without one, nothing is retried. */
  budget: RetryBudget | undefined;
  /** Time kept free before the deadline for the gateway's own work (fusion, the answer). */
  reserveMs: number;
  /** Base delay before a retry when the engine gave no `retryAfterMs` (jittered ×0.5–1.5). */
  backoffMs: number;
  onDecision?: (decision: RetryDecision) => void;
}

/** The least time a retry must have left to be worth sending. */
const MIN_ATTEMPT_MS = 20;

/** Whether a failure may be retried at all (before deadline and budget are considered). */
export function isRetryable(err: unknown, method: string, idempotent = false): err is UpstreamError {
  if (!(READ_METHODS.has(method) || idempotent) || !(err instanceof UpstreamError)) return false;
  switch (err.reason) {
    case 'remote-error':
    case 'timeout':
    case 'transport':
      return err.retryable;
    default:
      // crashed/not-ready (the supervisor restarts it on its own schedule), circuit-open,
      // queue-full, aborted, malformed, too-large: a second try cannot help.
      return false;
  }
}

/**
 * Run `attempt`; on a retryable failure, retry it once if deadline and budget allow.
 * `attempt` is called afresh each time, so it can forward the then-remaining deadline.
 */
export function withRetry<T>(attempt: () => Promise<T>, guard: RetryGuard): Promise<T> {
  guard.budget?.recordCall();
  // Plain promise chaining, not async/await: on the happy path (every leg of every request) this
  // adds one reaction to the attempt's promise and nothing else.
  return attempt().then(undefined, (err: unknown) => retryAfterFailure(err, attempt, guard));
}

function retryAfterFailure<T>(err: unknown, attempt: () => Promise<T>, guard: RetryGuard): Promise<T> {
  if (!guard.budget || guard.signal?.aborted || !isRetryable(err, guard.method, guard.idempotent)) return Promise.reject(err);
  const waitMs =
    err.retryAfterMs !== undefined && Number.isFinite(err.retryAfterMs)
      ? Math.max(0, Math.round(err.retryAfterMs))
      : Math.round(guard.backoffMs * (0.5 + Math.random()));
  const left = guard.deadlineAt - performance.now() - guard.reserveMs;
  if (waitMs + MIN_ATTEMPT_MS > left) {
    guard.onDecision?.({ kind: 'skipped', why: 'deadline', error: err });
    return Promise.reject(err);
  }
  if (!guard.budget.tryAcquire()) {
    guard.onDecision?.({ kind: 'skipped', why: 'budget', error: err });
    return Promise.reject(err);
  }
  guard.onDecision?.({ kind: 'retry', waitMs, error: err });
  if (waitMs === 0) return attempt();
  return sleep(waitMs, guard.signal).then((slept) => (slept ? attempt() : Promise.reject(err)));
}

/** Resolves true after `ms`, or false as soon as `signal` aborts. */
function sleep(ms: number, signal: AbortLike | undefined): Promise<boolean> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve(false);
    const onAbort = (): void => {
      clearTimeout(timer);
      resolve(false);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve(true);
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** A call's retry policy: what the request allows (the layer reads method, deadline and signal off the call). */
export interface RetryPolicy {
  /** The gateway-wide budget; without one, nothing is retried. */
  budget: RetryBudget | undefined;
  /** Base delay before a retry when the engine gave no `retryAfterMs` (jittered ×0.5–1.5). */
  backoffMs: number;
  /** A write the caller showed to be safe to repeat (§7.10, §7.11). */
  idempotent?: boolean;
  /** Every decision, for `usage.notes` and metrics. */
  onDecision?: (decision: RetryDecision) => void;
}

/**
 * The retry layer: a call that carries a policy is retried by `withRetry`'s rules. The call's
 * `deadlineAt` already excludes the gateway's reserve, so the guard reserves nothing more.
 */
export const retryLayer: Layer = (next) => (call) => {
  const policy = call.retry;
  if (!policy) return next(call);
  return withRetry(() => next(call), {
    method: call.method,
    idempotent: policy.idempotent ?? false,
    deadlineAt: call.deadlineAt,
    signal: call.signal,
    budget: policy.budget,
    reserveMs: 0,
    backoffMs: policy.backoffMs,
    onDecision: policy.onDecision,
  });
};

/** A one-line `usage.notes` entry for a retry decision. */
export function describeRetry(engineId: string, decision: RetryDecision): string {
  const code = decision.error.code;
  if (decision.kind === 'retry') return `engine ${engineId}: retried once after ${code} (waited ${decision.waitMs} ms)`;
  return decision.why === 'budget'
    ? `engine ${engineId}: not retried after ${code}: gateway retry budget exhausted`
    : `engine ${engineId}: not retried after ${code}: no time left before the deadline`;
}
