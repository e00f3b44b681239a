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
  /** Ask the engine to stream progress (a fresh per-leg token is attached). */
  onProgress?: (frame: JsonObject) => void;
  onLog?: (frame: JsonObject) => void;
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
