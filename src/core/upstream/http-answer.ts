/**
 * What every HTTP transport makes of an answer's body and status (§5.2): a body that is not JSON
 * is malformed; an answer that is not a plain 200 is still named by its JSON-RPC body when it has
 * one, otherwise by its status (429 and 413 mirror -32011 and -32013, the rest is a transport
 * fault), with a `Retry-After` hint when the engine sent one.
 */
import { UpstreamError } from './errors.js';
import { settleResponse } from './frames.js';

/** The most of a non-200 body read to look for a JSON-RPC error in it. */
export const STATUS_BODY_BYTES = 65_536;

export function parseFrame(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new UpstreamError('malformed', 'answer is not valid JSON');
  }
}

export function statusFailure(status: number, retryAfter: unknown, text: string, id: number): UpstreamError {
  // A JSON-RPC body on a non-200 still tells us the code (§5.2 mirrors).
  try {
    settleResponse(JSON.parse(text), id);
  } catch (err) {
    if (err instanceof UpstreamError && err.reason === 'remote-error') return err;
  }
  const retryAfterMs = parseRetryAfter(retryAfter);
  if (status === 429) {
    return new UpstreamError('remote-error', 'rate limited (HTTP 429)', { code: -32011, message: 'rate limited' }, retryAfterMs);
  }
  if (status === 413)
    return new UpstreamError('remote-error', 'payload too large (HTTP 413)', { code: -32013, message: 'payload too large' });
  return new UpstreamError('transport', `HTTP ${status}`, undefined, retryAfterMs);
}

/** `Retry-After` as delta-seconds or an HTTP date → ms from now; undefined when absent or unreadable. */
export function parseRetryAfter(value: unknown): number | undefined {
  const raw = Array.isArray(value) ? value[0] : value;
  if (typeof raw !== 'string' || raw.length === 0) return undefined;
  const seconds = Number(raw);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const date = Date.parse(raw);
  return Number.isFinite(date) ? Math.max(0, date - Date.now()) : undefined;
}
