/**
 * The transport-agnostic upstream contract: one RCP call to one engine, with its own id space,
 * timeout, abort signal and progress routing. Implementations live with their runtime
 * (node/upstream/http.ts over undici, node/upstream/stdio.ts over a child process, built by
 * node/upstream/factory.ts) or with the tests (a fake); the composition root hands the core a
 * `TransportFactory`, so the core never names a runtime.
 */
import type { EngineConfig } from '../config/schema.js';
import type { JsonObject } from '../protocol/jsonrpc.js';
import type { AbortLike } from '../service/cancellation.js';

export interface UpstreamCallOptions {
  /** Aborts the call (client cancel, disconnect, gateway deadline). */
  signal?: AbortLike;
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
  /**
   * Present on transports that own a process (stdio engines): the supervisor starts it before
   * the first `initialize`, restarts it after `onExit`, kills it when an initialize fails.
   */
  readonly lifecycle?: TransportLifecycle;
}

export interface TransportLifecycle {
  start(): Promise<void>;
  readonly alive: boolean;
  readonly pid: number | undefined;
  kill(): void;
}

/** What an engine's transport may tell its supervisor, outside any call. */
export interface TransportEvents {
  /** A line the engine wrote on stderr (stdio engines). */
  onStderr(line: string): void;
  /** An engine log frame tied to no call (§17.1). */
  onLog(frame: JsonObject): void;
  /** The engine's process exited (stdio engines). */
  onExit(code: number | null, signal: string | null): void;
}

/** What the engine gives its transport: its concurrency and size caps. */
export interface TransportLimits {
  connections: number;
  maxResponseBytes: number;
  /**
   * A free slot of the engine's concurrency cap (`maxConcurrent`) for a hedged read's second
   * request, or undefined when none is free (resilience/limiter.ts `trySpare`).
   */
  spareSlot?: () => (() => void) | undefined;
}

/** Builds the transport for one engine entry; chosen at the composition root per runtime. */
export type TransportFactory = (config: EngineConfig, limits: TransportLimits, events: TransportEvents) => UpstreamTransport;
