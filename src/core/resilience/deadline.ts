/**
 * The deadline layer: each attempt's time budget. It runs once per attempt, before the attempt
 * waits for a limiter slot, because the budget runs from the moment the attempt starts: time
 * spent queued counts against it (the limiter gives up at `expiresAt`, and the transport is
 * given only what is left when the call is finally sent).
 *
 * - No time left before the request's deadline: refused with `timeout`, nothing sent.
 * - The attempt may use what is left of the request's deadline, capped by the engine's own
 *   `timeoutMs`.
 * - §16.2: the engine is told the deadline it has, `_meta.deadlineMs`, strictly smaller than
 *   what the gateway waits (a retry, sent later, is told less).
 */
import { shallowCopy, withMeta } from '../protocol/copy.js';
import type { Layer } from '../upstream/call.js';
import { UpstreamError } from '../upstream/errors.js';

export function deadlineLayer(engineTimeoutMs: number): Layer {
  return (next) => (call) => {
    const now = performance.now();
    const left = call.deadlineAt - now;
    if (left <= 0) return Promise.reject(new UpstreamError('timeout', 'no time left before the deadline'));
    // Copied, then extended (protocol/copy.ts says why not `{ ...call, expiresAt }`).
    const attempt = shallowCopy(call);
    attempt.params = withMeta(call.params, { deadlineMs: Math.max(1, Math.floor(left) - 1) });
    attempt.expiresAt = now + Math.max(1, Math.min(Math.floor(left), engineTimeoutMs));
    return next(attempt);
  };
}
