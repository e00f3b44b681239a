/**
 * A per-engine circuit breaker on opossum, with the corrections a gateway needs:
 *
 * - Outcomes are *reported* to opossum after the real call has settled, and only definite ones:
 *   an engine fault (transport, timeout, crash, malformed or oversized answer, -32603/-32010/
 *   -32011/-32014) is a failure; any other answer, including the caller's own errors (-32602,
 *   -32005, -32003, …), proves the engine alive and is a success; a call the caller aborted
 *   (cancel, disconnect, deadline), or one the gateway's own code failed, says nothing about the
 *   engine and is not reported at all.
 *   (opossum's errorFilter would count a filtered error as a *success*, so an aborted half-open
 *   trial would close the breaker; and its timeout does not abort the call — ours is enforced
 *   by the transport with an AbortSignal, so opossum's timeout is off.)
 * - A real minimum volume: opossum's default of 0 lets a single failure open the breaker.
 * - Half-open admits exactly one trial at a time; a trial that is aborted leaves the breaker
 *   half-open for the next caller. Outcomes of calls admitted before the last transition are
 *   stale and ignored, so only the trial decides a half-open breaker.
 * - The reset timeout grows ×2 per consecutive opening (capped, ±20 % jitter so a fleet of
 *   gateways does not probe in lock-step) and is never shorter than the engine's own
 *   `retryAfterMs` / `Retry-After` hint (§12.2), itself capped at `maxResetTimeoutMs`.
 * - Closing starts a fresh rolling window: the failures that opened the breaker must not count
 *   again right after recovery.
 */
import CircuitBreaker from 'opossum';
import type { BreakerSettings } from '../config/schema.js';
import { ErrorCode } from '../protocol/errors.js';
import type { Layer } from '../upstream/call.js';
import { UpstreamError } from '../upstream/errors.js';

export type BreakerState = 'closed' | 'open' | 'half-open';

export interface TransitionInfo {
  /** How long the breaker stays open before the next trial (for an opening). */
  resetTimeoutMs: number;
  /** Consecutive openings without a close in between. */
  openings: number;
}

export interface BreakerEvents {
  onTransition?: (from: BreakerState, to: BreakerState, info: TransitionInfo) => void;
}

/** What a settled call says about the engine. */
export type CallOutcome = 'success' | 'failure' | 'neutral';

/** Classify a failed call for the breaker (see the header comment). */
export function outcomeOf(err: unknown): CallOutcome {
  // Not an UpstreamError: the gateway's own code threw (a bug), which says nothing about the engine.
  if (!(err instanceof UpstreamError)) return 'neutral';
  if (err.reason === 'aborted' || err.reason === 'circuit-open' || err.reason === 'queue-full' || err.reason === 'not-ready')
    return 'neutral';
  if (err.isEngineFault) return 'failure';
  // The engine answered with a non-fault error: alive. A -32006 it was never asked for is odd, not evidence.
  return err.reason === 'remote-error' && err.remote?.code === ErrorCode.Cancelled ? 'neutral' : 'success';
}

export interface BreakerSnapshot {
  state: BreakerState;
  openings: number;
  /** While open: ms until the next trial is allowed. */
  retryInMs?: number;
}

type Report = () => Promise<void>;
const SUCCEED: Report = () => Promise.resolve();
const NO_ARGS: readonly unknown[] = Object.freeze([]);

export class EngineBreaker {
  private circuit: CircuitBreaker<[Report], void>;
  private openings = 0;
  private state: BreakerState = 'closed';
  /** Bumped on every transition: an outcome from an older generation is stale. */
  private generation = 0;
  private trialInFlight = false;
  private retryAfterHintMs = 0;
  private openedAt = 0;
  private currentResetMs = 0;

  constructor(
    private readonly settings: BreakerSettings,
    private readonly events: BreakerEvents = {},
    private readonly now: () => number = () => performance.now(),
  ) {
    this.circuit = this.createCircuit();
  }

  get currentState(): BreakerState {
    return this.state;
  }

  get consecutiveOpenings(): number {
    return this.openings;
  }

  /** Is a call allowed right now? Half-open admits exactly one trial at a time. */
  get admits(): boolean {
    if (this.state === 'closed') return true;
    if (this.state === 'half-open') return !this.trialInFlight;
    return false;
  }

  snapshot(): BreakerSnapshot {
    const out: BreakerSnapshot = { state: this.state, openings: this.openings };
    if (this.state === 'open') out.retryInMs = Math.max(0, Math.round(this.openedAt + this.currentResetMs - this.now()));
    return out;
  }

  /**
   * Run `action` through the breaker. Rejects with UpstreamError('circuit-open') when refused.
   * `check` vets a result before it counts: a result it throws on is a failure of the call, as if
   * the action had rejected with that error (checked here, not in a reaction of its own).
   */
  fire<T>(action: () => Promise<T>, check?: (result: T) => void): Promise<T> {
    if (!this.admits) return Promise.reject(new UpstreamError('circuit-open', 'circuit breaker is open'));
    const trial = this.state === 'half-open';
    const generation = this.generation;
    if (trial) this.trialInFlight = true;
    const failed = (err: unknown): Promise<T> =>
      this.settle(outcomeOf(err), err, generation, trial).then(() => {
        throw err;
      });
    return action().then((result) => {
      if (check) {
        try {
          check(result);
        } catch (err) {
          return failed(err);
        }
      }
      // A success on a closed breaker cannot move it: reported without holding the answer back
      // (the happy path's cost). A trial's success is awaited, so the breaker has closed when it returns.
      if (!trial) {
        this.reportSuccess(generation);
        return result;
      }
      return this.settle('success', undefined, generation, trial).then(() => result);
    }, failed);
  }

  /**
   * A success on a closed breaker, counted as opossum counts what it decides by, less its promises:
   * opossum opens on failures ÷ fires in its rolling window (circuit.js `fail`), and a closed
   * circuit does nothing else on a success (its only other 'success' listener closes a half-open
   * one), so the leg is one 'fire' event. A 'success' event would add to a count nothing reads and,
   * in opossum 9, push a latency into the current bucket's array even with percentiles off: one
   * entry per leg, kept for the whole rolling window (docs/performance.md, "Bounds on what is
   * left", stop 41). Firing a no-op action instead cost seven promises and two timestamps per leg,
   * ~0.07 of the bare ceiling's CPU with three engines (bench/RESULTS.md, 2026-12-02, promises).
   */
  private reportSuccess(generation: number): void {
    if (generation !== this.generation) return;
    this.circuit.emit('fire', NO_ARGS);
  }

  shutdown(): void {
    this.circuit.shutdown();
  }

  /** Report a definite outcome to opossum (which decides open/close); then free the trial slot. */
  private async settle(outcome: CallOutcome, err: unknown, generation: number, trial: boolean): Promise<void> {
    try {
      if (outcome === 'neutral' || generation !== this.generation) return;
      if (outcome === 'failure') {
        const hint = err instanceof UpstreamError ? err.retryAfterMs : undefined;
        if (hint !== undefined && Number.isFinite(hint)) this.retryAfterHintMs = Math.max(this.retryAfterHintMs, hint);
        // opossum reads `resetTimeout` when it opens, which this very report may cause.
        this.options.resetTimeout = this.nextResetTimeout();
        await this.circuit.fire(() => Promise.reject(err instanceof Error ? err : new Error(String(err)))).catch(() => undefined);
      } else {
        await this.circuit.fire(SUCCEED).catch(() => undefined);
      }
    } finally {
      if (trial) this.trialInFlight = false;
    }
  }

  private createCircuit(): CircuitBreaker<[Report], void> {
    const circuit = new CircuitBreaker((report: Report) => report(), {
      timeout: false,
      errorThresholdPercentage: this.settings.errorThresholdPercentage,
      rollingCountTimeout: this.settings.rollingWindowMs,
      rollingCountBuckets: this.settings.rollingBuckets,
      volumeThreshold: this.settings.volumeThreshold,
      resetTimeout: this.settings.resetTimeoutMs,
      // Latency percentiles and snapshots cost a sort per failure and a timer; we use neither.
      rollingPercentilesEnabled: false,
      enableSnapshots: false,
    });
    circuit.on('open', () => {
      this.openings += 1;
      this.openedAt = this.now();
      this.currentResetMs = this.options.resetTimeout ?? this.settings.resetTimeoutMs;
      this.move('open');
    });
    circuit.on('halfOpen', () => this.move('half-open'));
    circuit.on('close', () => {
      this.openings = 0;
      this.retryAfterHintMs = 0;
      this.move('closed');
      // A fresh rolling window after recovery (the old one still holds the failures that opened it).
      const old = this.circuit;
      this.circuit = this.createCircuit();
      old.shutdown();
    });
    return circuit;
  }

  private move(to: BreakerState): void {
    const from = this.state;
    if (from === to) return;
    this.state = to;
    this.generation += 1;
    this.events.onTransition?.(from, to, { resetTimeoutMs: this.currentResetMs, openings: this.openings });
  }

  /** opossum reads `options.resetTimeout` each time it opens; its typings do not expose `options`. */
  private get options(): { resetTimeout?: number } {
    return (this.circuit as unknown as { options: { resetTimeout?: number } }).options;
  }

  /** Exponential in consecutive openings, capped, ±20 % jitter, never below a retryAfter hint (itself capped). */
  private nextResetTimeout(): number {
    const { resetTimeoutMs, maxResetTimeoutMs } = this.settings;
    const base = Math.min(resetTimeoutMs * 2 ** Math.min(this.openings, 20), maxResetTimeoutMs);
    const jittered = base * (0.8 + Math.random() * 0.4);
    const hinted = Math.max(jittered, Math.min(this.retryAfterHintMs, maxResetTimeoutMs));
    return Math.max(1, Math.round(Math.min(hinted, maxResetTimeoutMs)));
  }
}

/**
 * The breaker layer: the attempt runs through `breaker`, and its answer is checked (`validate`)
 * inside it, so a malformed answer counts against the engine like any other fault. It sits
 * inside the limiter: a call waiting for a slot is not yet a trial of a half-open breaker.
 */
export function breakerLayer(breaker: EngineBreaker): Layer {
  return (next) => (call) => breaker.fire(() => next(call), call.validate);
}
