/**
 * One call to one engine as the layers of its pipeline see it (pipeline.ts), and the shape of
 * a layer: `(next: Call) => Call`, a function that may refuse, wait, retry or observe before
 * and after handing the call on (the model is undici's `Dispatcher.compose`).
 */
import type { JsonObject } from '../protocol/jsonrpc.js';
import type { RetryPolicy } from '../resilience/retry.js';
import type { AbortLike } from '../service/cancellation.js';

export interface UpstreamCall {
  readonly method: string;
  readonly params: JsonObject;
  /**
   * When the engine's answer must be in by, on the `performance.now()` clock: the request's
   * deadline less the time the gateway keeps for its own work (fusion, the answer).
   */
  readonly deadlineAt: number;
  /**
   * When this attempt gives up (set by the deadline layer, so time spent waiting for a limiter
   * slot counts against it). Absent before that layer: the whole `deadlineAt` is left.
   */
  readonly expiresAt?: number;
  /** Aborts the call (client cancel, disconnect, gateway deadline). */
  readonly signal?: AbortLike;
  /** Progress frames of this call (relayed only from an engine that advertised `streaming`, §9). */
  readonly onProgress?: (frame: JsonObject) => void;
  /** `notifications/log` frames of this call (relayed only from an engine that advertised `log`, §17.1). */
  readonly onLog?: (frame: JsonObject) => void;
  /** Extra HTTP headers (trace propagation). */
  readonly headers?: Readonly<Record<string, string>>;
  /**
   * Shape check run on the answer inside the breaker: throw UpstreamError('malformed') so a
   * wrong-shaped answer counts against the engine like any other fault.
   */
  readonly validate?: (result: JsonObject) => void;
  /** Whether and how a failed attempt may be repeated; absent = exactly one attempt. */
  readonly retry?: RetryPolicy;
}

/** Sends a call (or hands it on) and settles with the engine's result or an UpstreamError. */
export type Call = (call: UpstreamCall) => Promise<JsonObject>;

/** One layer of the pipeline: wraps the next call. */
export type Layer = (next: Call) => Call;

/** `layers` listed outermost first, around `last`. */
export function compose(layers: readonly Layer[], last: Call): Call {
  return layers.reduceRight<Call>((next, layer) => layer(next), last);
}
