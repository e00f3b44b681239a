/**
 * The contract between the inbound protocol machinery (session + transports) and whatever
 * answers the methods (the gateway, or a bundled demo engine).
 */
import type { InitializeResult } from '../protocol/capabilities.js';
import type { JsonObject, RequestId } from '../protocol/jsonrpc.js';
import type { RequestMeta } from '../protocol/params.js';
import type { Principal } from '../auth/principal.js';
import type { TraceContext } from '../protocol/trace.js';
import type { AbortLike } from './cancellation.js';

export interface ProgressUpdate {
  progress?: number;
  stage?: string;
  message?: string;
  partial?: JsonObject;
}

export type LogLevel = 'debug' | 'info' | 'notice' | 'warning' | 'error';

export interface LogEntry {
  level: LogLevel;
  message: string;
  logger?: string;
  data?: JsonObject;
}

export interface CallContext {
  method: string;
  requestId: RequestId;
  /** Aborted on client cancel, disconnect, deadline or shutdown; `signal.reason` says which. */
  signal: AbortLike;
  /** Absolute deadline on the `performance.now()` clock. */
  deadlineAt: number;
  /** The deadline budget this request was given, in ms (min of configured default and `_meta.deadlineMs`). */
  deadlineMs: number;
  /** Present only when the client asked for progress (§9: `_meta.progressToken`) and the transport can carry it. */
  progress: ((update: ProgressUpdate) => void) | undefined;
  /** Present only when the client opted into logs (§17.1). */
  log: ((entry: LogEntry) => void) | undefined;
  meta: RequestMeta;
  /**
   * The request's trace (W3C `traceparent` header, else `_meta.traceId`, else generated; §16.2),
   * resolved once where the context is made: every engine, the answer's `_meta` and the request
   * line carry its `traceId`.
   */
  trace: TraceContext;
  transport: 'http' | 'stdio';
  /** Lower-cased inbound HTTP headers (HTTP transport only). */
  headers: Readonly<Record<string, string>>;
  /** Who is calling, when client authentication (or a stdio principal) is configured (core/auth). */
  principal?: Principal;
}

export interface RcpService {
  /**
   * The `initialize`/`info` result (§7.1, §7.2): identity, fixed capability set, `_meta`. With a
   * principal scoped to some engines (core/auth), the set those engines give (§15.6: nothing of
   * the engines outside its scope shows); wrappers pass the principal on.
   */
  describe(principal?: Principal): InitializeResult;
  /** Answer a gated method. Throw `RcpError` for protocol errors. */
  call(method: string, params: JsonObject, ctx: CallContext): Promise<JsonObject>;
  /** Default per-request deadline in ms. */
  readonly defaultDeadlineMs: number;
}

/** Why a call's signal was aborted. */
export type AbortReason = 'cancel' | 'disconnect' | 'deadline' | 'shutdown';

export function abortReasonOf(signal: AbortLike): AbortReason | undefined {
  const reason: unknown = signal.reason;
  return reason === 'cancel' || reason === 'disconnect' || reason === 'deadline' || reason === 'shutdown' ? reason : undefined;
}
