/**
 * What both transports do with JSON-RPC frames the same way: tag a request with a fresh
 * per-leg progress token, and read a response frame into a result or an UpstreamError.
 */
import { withMeta } from '../protocol/copy.js';
import { isJsonObject, type JsonObject } from '../protocol/jsonrpc.js';
import { UpstreamError } from './errors.js';

/** A fresh per-leg progress token; upstream tokens never reach the client (§9). */
let tokenCounter = 0;
export function nextProgressToken(): string {
  tokenCounter = (tokenCounter + 1) % Number.MAX_SAFE_INTEGER;
  return `gw-${tokenCounter}`;
}

/** `params` with `_meta.progressToken` set to `token` (the rest of `_meta` kept). */
export function withProgressToken(params: JsonObject, token: string): JsonObject {
  return withMeta(params, { progressToken: token });
}

/** A JSON-RPC response frame for `id` → its result, or the matching failure. */
export function settleResponse(frame: unknown, id: number): JsonObject {
  if (!isJsonObject(frame) || frame.jsonrpc !== '2.0') throw new UpstreamError('malformed', 'answer is not a JSON-RPC 2.0 response');
  if (frame.id !== id) throw new UpstreamError('malformed', 'answer carries an unknown id');
  if (isJsonObject(frame.error)) {
    const code = typeof frame.error.code === 'number' && Number.isInteger(frame.error.code) ? frame.error.code : -32603;
    const message = typeof frame.error.message === 'string' ? frame.error.message.slice(0, 500) : 'error';
    const data = isJsonObject(frame.error.data) ? frame.error.data : undefined;
    const retryAfterMs = typeof data?.retryAfterMs === 'number' && Number.isFinite(data.retryAfterMs) ? data.retryAfterMs : undefined;
    throw new UpstreamError('remote-error', message, { code, message, ...(data ? { data } : {}) }, retryAfterMs);
  }
  if (!isJsonObject(frame.result)) throw new UpstreamError('malformed', 'answer has no result object');
  return frame.result;
}
