/**
 * An engine's call pipeline, composed here and nowhere else. Outermost first:
 *
 *   retry ─▶ deadline ─▶ fail-fast ─▶ limiter ─▶ breaker ─▶ send (transport)
 *
 * - retry (resilience/retry.ts): a retryable failure may be sent once more, through the whole
 *   pipeline again, within the gateway-wide retry budget and the request's deadline.
 * - deadline (resilience/deadline.ts): the attempt's budget starts now, before any queueing, so
 *   time spent waiting for a slot counts; the engine is told a strictly smaller `deadlineMs`.
 * - fail-fast (resilience/fail-fast.ts): an engine that is not ready, or whose breaker is open,
 *   refuses at once: such a call never takes a limiter slot.
 * - limiter (resilience/limiter.ts): bounded concurrency and queue; a full queue sheds the call
 *   before it reaches the transport; a queued call gives up at its budget or on abort.
 * - breaker (resilience/breaker.ts): the attempt's outcome, its answer validated, counts for or
 *   against the engine. Inside the limiter: only a call that holds a slot is a trial.
 * - send (upstream/send.ts): the transport call, with the time the attempt has left.
 *
 * Every layer rejects with UpstreamError only, so the pipeline does too.
 */
import type { EngineBreaker } from '../resilience/breaker.js';
import { breakerLayer } from '../resilience/breaker.js';
import { deadlineLayer } from '../resilience/deadline.js';
import { failFastLayer, type Admission } from '../resilience/fail-fast.js';
import type { Limiter } from '../resilience/limiter.js';
import { retryLayer } from '../resilience/retry.js';
import { compose, type Call } from './call.js';

export interface PipelineParts {
  /** The engine's own per-call timeout: an attempt never gets more. */
  timeoutMs: number;
  admission: Admission;
  limiter: Limiter;
  breaker: EngineBreaker;
  /** The innermost call (send.ts; a fake transport in tests). */
  send: Call;
}

export function composePipeline(parts: PipelineParts): Call {
  return compose(
    [retryLayer, deadlineLayer(parts.timeoutMs), failFastLayer(parts.admission), parts.limiter.layer, breakerLayer(parts.breaker)],
    parts.send,
  );
}
