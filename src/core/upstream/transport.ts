/**
 * The transport-agnostic upstream contract: one RCP call to one engine, with its own id space,
 * timeout, abort signal and progress routing. Implementations: http.ts (undici), stdio.ts.
 */
import type { JsonObject } from '../protocol/jsonrpc.js';

export interface UpstreamCallOptions {
  /** Aborts the call (client cancel, disconnect, gateway deadline). */
  signal?: AbortSignal;
  /** Per-call timeout in ms. */
  timeoutMs: number;
  /** Progress frames of this call, matched by its own per-leg token (never the client's, §9). */
  onProgress?: (frame: JsonObject) => void;
  /** `notifications/log` frames of this call (§17.1). */
  onLog?: (frame: JsonObject) => void;
  /**
   * The engine advertised `streaming` and the caller wants its frames: attach a fresh per-leg
   * progress token and, over HTTP, ask for an SSE answer (§5.2). Otherwise a plain JSON call.
   */
  stream?: boolean;
  /** Extra HTTP headers (trace propagation). Ignored by stdio. */
  headers?: Readonly<Record<string, string>>;
  /** Upper bound on the answer's size in bytes. */
  maxResponseBytes: number;
}

export interface UpstreamTransport {
  readonly kind: 'http' | 'stdio';
  call(method: string, params: JsonObject, options: UpstreamCallOptions): Promise<JsonObject>;
  /** Fire-and-forget notification (e.g. notifications/cancel). */
  notify(method: string, params: JsonObject): void;
  /** Release sockets / stop the child process. */
  close(): Promise<void>;
}

/** A fresh per-leg progress token; upstream tokens never reach the client. */
let tokenCounter = 0;
export function nextProgressToken(): string {
  tokenCounter = (tokenCounter + 1) % Number.MAX_SAFE_INTEGER;
  return `gw-${tokenCounter}`;
}
