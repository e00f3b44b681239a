/**
 * Load shedding and graceful shutdown, shared by both inbound transports.
 *
 * - AdmissionGate: the gateway-wide cap on requests in flight. Beyond it a request is refused
 *   at once with -32011 and a `retryAfterMs` hint (§12.1/§12.2) instead of queueing without
 *   bound — over HTTP before the JSON-RPC layer sees the body (429 + Retry-After), over stdio
 *   by the session (a JSON-RPC -32011 answer). While draining it refuses everything.
 * - InFlightRegistry: the sessions that have requests in flight, so shutdown can answer what is
 *   left after the drain timeout (-32010) instead of dropping it: every request is answered
 *   exactly once (§13.1).
 */
import { ErrorCode } from '../protocol/errors.js';

export type Admission = { ok: true; release: () => void } | { ok: false; retryAfterMs: number };

/** Retry hint when the gateway is saturated: in-flight requests turn over in well under a second. */
const SATURATED_RETRY_AFTER_MS = 250;
/** Retry hint while shutting down: another replica (or this one, restarted) should take it. */
const DRAINING_RETRY_AFTER_MS = 1_000;

export class AdmissionGate {
  private count = 0;
  private drainingFlag = false;
  private idleWaiters: Array<() => void> = [];

  constructor(private readonly maxInFlight: number) {}

  get inFlight(): number {
    return this.count;
  }

  get draining(): boolean {
    return this.drainingFlag;
  }

  /**
   * Take `weight` slots at once (a batch takes one per member), all or none; `release` must be
   * called exactly once when the request (or the whole batch) has been answered.
   */
  tryEnter(weight = 1): Admission {
    if (this.drainingFlag) return { ok: false, retryAfterMs: DRAINING_RETRY_AFTER_MS };
    if (this.count + weight > this.maxInFlight) return { ok: false, retryAfterMs: SATURATED_RETRY_AFTER_MS };
    this.count += weight;
    let released = false;
    return {
      ok: true,
      release: () => {
        if (released) return;
        released = true;
        this.count -= weight;
        if (this.count === 0) for (const wake of this.idleWaiters.splice(0)) wake();
      },
    };
  }

  /** Stop admitting (shutdown). */
  drain(): void {
    this.drainingFlag = true;
  }

  /** Resolves true once nothing is in flight, or false when `timeoutMs` passes first. */
  idle(timeoutMs: number): Promise<boolean> {
    if (this.count === 0) return Promise.resolve(true);
    return new Promise((resolve) => {
      const wake = (): void => {
        clearTimeout(timer);
        resolve(true);
      };
      const timer = setTimeout(() => {
        this.idleWaiters = this.idleWaiters.filter((w) => w !== wake);
        resolve(false);
      }, timeoutMs);
      timer.unref?.();
      this.idleWaiters.push(wake);
    });
  }
}

/** What the registry needs from a session. */
export interface FailableSession {
  failAll(code: number, message: string): void;
}

export class InFlightRegistry {
  private readonly sessions = new Set<FailableSession>();

  add(session: FailableSession): void {
    this.sessions.add(session);
  }

  delete(session: FailableSession): void {
    this.sessions.delete(session);
  }

  get size(): number {
    return this.sessions.size;
  }

  /** Answer every request still in flight with -32010 (the server is going away; retry elsewhere). */
  failAll(message = 'server is shutting down'): void {
    for (const session of [...this.sessions]) session.failAll(ErrorCode.BackendUnavailable, message);
  }
}

/** The -32011 error for a refused admission (§12.1: `retryAfterMs` tells the client when to come back). */
export function shedError(retryAfterMs: number): { code: number; message: string; data: { retryable: true; retryAfterMs: number } } {
  return { code: ErrorCode.RateLimited, message: 'gateway is at capacity', data: { retryable: true, retryAfterMs } };
}
