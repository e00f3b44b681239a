/**
 * Failures of one upstream call, with a stable local reason. The mapping from reason to the
 * RCP wire code (§12) lives here and nowhere else.
 */
import { ErrorCode, RcpError, isRetryableCode, type WireError } from '../protocol/errors.js';
import type { AbortLike } from '../service/cancellation.js';

export type UpstreamFailure =
  | 'remote-error' // the engine answered with a JSON-RPC error
  | 'timeout' // per-engine timeout elapsed
  | 'aborted' // the caller aborted (cancel, disconnect, deadline)
  | 'transport' // connection refused/reset, non-200 without a JSON-RPC body
  | 'crashed' // stdio engine exited with the call in flight
  | 'malformed' // answer is not valid JSON-RPC or has the wrong shape
  | 'too-large' // answer exceeded the configured byte cap
  | 'circuit-open' // breaker refused the call
  | 'queue-full' // limiter queue full: shed
  | 'not-ready'; // engine not initialized (down at startup, restarting)

export class UpstreamError extends Error {
  constructor(
    readonly reason: UpstreamFailure,
    message: string,
    readonly remote?: WireError,
    readonly retryAfterMs?: number,
  ) {
    super(message);
    this.name = 'UpstreamError';
  }

  /** The wire code this failure stands for. */
  get code(): number {
    return upstreamCode(this);
  }

  /** Counts against the engine's circuit breaker: never the caller's own errors (-32602, -32005, …). */
  get isEngineFault(): boolean {
    if (this.reason === 'remote-error') return this.remote !== undefined && isRetryableCode(this.remote.code);
    return this.reason !== 'aborted' && this.reason !== 'circuit-open' && this.reason !== 'queue-full';
  }

  /**
   * The engine refused the request as the caller's own error (§12.2: -32602, -32005, -32003,
   * -32004, -32600, … anything not retryable, bar -32006): the engine is alive and said so.
   */
  get isClientError(): boolean {
    return this.reason === 'remote-error' && this.remote !== undefined && !isRetryableCode(this.remote.code) && !this.cancelledByEngine;
  }

  /**
   * The engine answered -32006 without the gateway having cancelled (a cancelled leg is
   * abandoned before any answer): that leg failed, the client's call was not cancelled.
   */
  get cancelledByEngine(): boolean {
    return this.reason === 'remote-error' && this.remote?.code === ErrorCode.Cancelled;
  }

  get retryable(): boolean {
    if (this.cancelledByEngine) return true; // another engine, or a retry, may well answer
    if (this.reason === 'remote-error') return this.remote !== undefined && isRetryableCode(this.remote.code);
    return this.reason === 'timeout' || this.reason === 'transport' || this.reason === 'crashed' || this.reason === 'not-ready';
  }
}

export function upstreamCode(err: UpstreamError): number {
  switch (err.reason) {
    case 'remote-error':
      // -32006 means "you cancelled" (§12); the client did not, so it must never see it.
      if (err.cancelledByEngine) return ErrorCode.BackendUnavailable;
      return err.remote?.code ?? ErrorCode.InternalError;
    case 'timeout':
      return ErrorCode.Timeout;
    case 'aborted':
      return ErrorCode.Cancelled;
    case 'too-large':
    case 'malformed':
      return ErrorCode.InternalError;
    case 'queue-full':
      return ErrorCode.RateLimited;
    case 'transport':
    case 'crashed':
    case 'circuit-open':
    case 'not-ready':
      return ErrorCode.BackendUnavailable;
  }
}

/** Surface an upstream failure to the client (single-engine routes, required engines). */
/**
 * What a client is told about an upstream failure. Failures the gateway itself words (timeouts,
 * queue, breaker, size caps, aborts) keep their text; failures worded by the platform or the
 * engine's transport get a fixed sentence, since their text names engine addresses and ports
 * (`connect ECONNREFUSED 10.0.0.7:9102`) although catalog/list hides endpoints. The full text
 * goes to the gateway's log (federation/sanitize.ts). An engine's own JSON-RPC error message is
 * its answer to the client and is passed on.
 */
const GENERIC_DETAIL: Partial<Record<UpstreamFailure, string>> = {
  transport: 'the engine could not be reached',
  crashed: 'the engine process exited during the call',
  malformed: 'the engine answered with a malformed response',
  'not-ready': 'the engine is not ready',
};

export function publicDetail(err: UpstreamError): string {
  if (err.reason === 'remote-error' && err.remote) return err.remote.message.slice(0, 300);
  return GENERIC_DETAIL[err.reason] ?? err.message.slice(0, 300);
}

export function toClientError(err: unknown, engineId: string): RcpError {
  if (err instanceof RcpError) return err;
  if (err instanceof UpstreamError) {
    const code = err.code;
    const data: Record<string, unknown> = { engine: engineId, reason: err.reason, retryable: err.retryable };
    if (err.retryAfterMs !== undefined) data.retryAfterMs = err.retryAfterMs;
    const remoteData = err.remote?.data;
    if (remoteData && typeof remoteData === 'object') {
      for (const key of ['field', 'option', 'retryAfterMs'] as const) {
        if (remoteData[key] !== undefined) data[key] = remoteData[key];
      }
    }
    data.detail = publicDetail(err);
    return new RcpError(code, `engine ${engineId}: ${publicDetail(err)}`, data);
  }
  return new RcpError(ErrorCode.InternalError, `engine ${engineId}: internal error`, { engine: engineId });
}

/** The failure of a call its caller aborted (client cancel, disconnect, the gateway's deadline), with the abort's reason. */
export function abortedCall(signal: AbortLike | undefined): UpstreamError {
  return new UpstreamError('aborted', `call aborted (${String(signal?.reason ?? 'abort')})`);
}
