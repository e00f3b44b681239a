/**
 * What a Session is given and what it reports: its options (transport, lifecycle mode, admission,
 * the observer of finished requests, the principal it runs as), the record of a finished request
 * that logs and metrics read, and one inbound message as a transport hands it over.
 */
import type { ResponseMessage } from '../protocol/jsonrpc.js';
import type { Admission, InFlightRegistry } from './admission.js';
import type { FrameSink } from './client-frames.js';
import type { AbortReason, CallContext } from '../service/contract.js';
import type { Principal } from '../auth/principal.js';

export interface SessionOptions {
  transport: 'http' | 'stdio';
  /** §5.2: a stateless HTTP server treats every request as implicitly initialized. */
  stateless: boolean;
  /** Extra time after the deadline before the session itself answers -32014 (safety net). */
  deadlineGraceMs?: number;
  /** Observer for every finished request (metrics, logs). */
  onFinished?: (info: FinishedInfo) => void;
  /** Gateway-wide in-flight cap for a transport that cannot refuse before JSON-RPC (stdio): -32011 beyond it. */
  admit?: () => Admission;
  /** Where a session with requests in flight is listed, so shutdown can answer them (-32010). */
  registry?: InFlightRegistry;
  /** Who this session's requests run as (core/auth): method scopes, deadline ceiling, `ctx.principal`. */
  principal?: Principal;
}

export interface FinishedInfo {
  method: string;
  code: number; // 0 = success
  durationMs: number;
  abortReason: AbortReason | undefined;
  /** The answer that left (its `id`, `result._meta`, `error`): what logs and metrics report on. */
  response: ResponseMessage;
  /** The context the service was called with; absent when the session answered on its own. */
  ctx?: CallContext;
  /** Who sent the request, when known (core/auth). */
  principal?: Principal;
}

export interface InboundRequest {
  value: unknown;
  sink?: FrameSink;
  headers?: Readonly<Record<string, string>>;
}
