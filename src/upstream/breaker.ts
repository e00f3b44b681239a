/**
 * A per-engine circuit breaker on opossum, with the two corrections a gateway needs:
 * a real minimum volume (opossum's default 0 lets one failure open it), and a reset timeout that
 * grows with consecutive openings (capped, jittered) and honours an engine's `retryAfterMs`.
 * Only engine faults count (transport, timeout, malformed, -32603/-32010/-32011/-32014); the
 * caller's own errors (-32602, -32005, …) never do. Timeouts are enforced by the transport with
 * an AbortSignal, so opossum's own (non-aborting) timeout is off.
 */
import CircuitBreaker from 'opossum';
import type { BreakerSettings } from '../config/schema.js';
import { UpstreamError } from './errors.js';

export type BreakerState = 'closed' | 'open' | 'half-open';

export interface BreakerEvents {
  onTransition?: (from: BreakerState, to: BreakerState, info: { resetTimeoutMs: number; openings: number }) => void;
}

type Action = () => Promise<unknown>;

export class EngineBreaker {
  private readonly breaker: CircuitBreaker<[Action], unknown>;
  private openings = 0;
  private state: BreakerState = 'closed';
  private trialInFlight = false;
  private retryAfterHintMs = 0;

  constructor(private readonly settings: BreakerSettings, events: BreakerEvents = {}) {
    this.breaker = new CircuitBreaker((action: Action) => action(), {
      timeout: false,
      errorThresholdPercentage: settings.errorThresholdPercentage,
      rollingCountTimeout: settings.rollingWindowMs,
      rollingCountBuckets: settings.rollingBuckets,
      volumeThreshold: settings.volumeThreshold,
      resetTimeout: settings.resetTimeoutMs,
      // true = "not a failure": caller errors and aborts never count against the engine.
      errorFilter: (err: unknown) => !(err instanceof UpstreamError && err.isEngineFault),
    });
    const move = (to: BreakerState): void => {
      const from = this.state;
      if (from === to) return;
      this.state = to;
      events.onTransition?.(from, to, { resetTimeoutMs: this.options.resetTimeout ?? 0, openings: this.openings });
    };
    this.breaker.on('open', () => {
      this.openings += 1;
      move('open');
    });
    this.breaker.on('halfOpen', () => {
      // Pre-set the timeout the *next* opening will use: the trial failing re-opens immediately.
      this.options.resetTimeout = this.nextResetTimeout();
      move('half-open');
    });
    this.breaker.on('close', () => {
      this.openings = 0;
      this.retryAfterHintMs = 0;
      this.options.resetTimeout = settings.resetTimeoutMs;
      move('closed');
    });
  }

  /** opossum reads `options.resetTimeout` each time it opens; its typings do not expose `options`. */
  private get options(): { resetTimeout?: number } {
    return (this.breaker as unknown as { options: { resetTimeout?: number } }).options;
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

  /** Run `action` through the breaker. Rejects with UpstreamError('circuit-open') when refused. */
  async fire<T>(action: () => Promise<T>): Promise<T> {
    if (!this.admits) throw new UpstreamError('circuit-open', 'circuit breaker is open');
    const trial = this.state === 'half-open';
    if (trial) this.trialInFlight = true;
    try {
      return (await this.breaker.fire(async () => {
        try {
          return await action();
        } catch (err) {
          if (err instanceof UpstreamError && err.isEngineFault && err.retryAfterMs !== undefined) {
            // Honour the engine's own back-off hint for the opening this failure may cause.
            this.retryAfterHintMs = Math.max(this.retryAfterHintMs, err.retryAfterMs);
            this.options.resetTimeout = Math.max(this.options.resetTimeout ?? 0, Math.min(err.retryAfterMs, this.settings.maxResetTimeoutMs));
          }
          throw err;
        }
      })) as T;
    } catch (err) {
      if (err instanceof Error && (err as { code?: string }).code === 'EOPENBREAKER') {
        throw new UpstreamError('circuit-open', 'circuit breaker is open');
      }
      throw err;
    } finally {
      if (trial) this.trialInFlight = false;
    }
  }

  /** Exponential in consecutive openings, capped, with ±20 % jitter, never below a retryAfter hint. */
  private nextResetTimeout(): number {
    const base = this.settings.resetTimeoutMs * 2 ** Math.min(this.openings, 16);
    const capped = Math.min(base, this.settings.maxResetTimeoutMs);
    const jittered = capped * (0.8 + Math.random() * 0.4);
    return Math.round(Math.min(this.settings.maxResetTimeoutMs, Math.max(jittered, this.retryAfterHintMs)));
  }

  shutdown(): void {
    this.breaker.shutdown();
  }
}
