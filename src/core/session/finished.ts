/**
 * Telling the session's observer (metrics, the request line) that a request finished. Its own
 * module so the session state machine stays about the protocol; the observer is the gateway's own
 * code, but a failure in it must never reach the client (session.ts `finish`).
 */
import type { Principal } from '../auth/principal.js';
import type { ResponseMessage } from '../protocol/jsonrpc.js';
import type { AbortReason, CallContext } from '../service/contract.js';
import type { FinishedInfo } from './session-options.js';

/** Positional arguments: this runs once per request, so no options object is made for it. */
export function reportFinished(
  onFinished: (info: FinishedInfo) => void,
  principal: Principal | undefined,
  method: string,
  started: number,
  abortReason: AbortReason | undefined,
  response: ResponseMessage,
  ctx: CallContext | undefined,
): void {
  const info: FinishedInfo = {
    method,
    code: 'error' in response ? response.error.code : 0,
    durationMs: performance.now() - started,
    abortReason,
    response,
  };
  if (ctx) info.ctx = ctx;
  if (principal) info.principal = principal;
  try {
    onFinished(info);
  } catch {
    // An observer's failure (metrics, the log line) must not replace the client's answer or
    // reject its promise: the answer is what the request produced, observed or not.
  }
}
