/**
 * The in-process tier's harness: a real `Gateway` over fake engines (fake-engine.ts) joined by
 * the in-memory transport, so a test calls the gateway directly, with no process, socket or
 * build, and can run every timer on `vi.useFakeTimers()`.
 *
 * Two ways in:
 * - `call(method, params, options)`: `gateway.call` with a CallContext built as the Session
 *   builds one (parsed `_meta`, deadline = min(default, `_meta.deadlineMs`), an AbortSignal
 *   aborted with 'deadline' when it passes, or with 'cancel' when the caller's signal aborts).
 *   Resolves with the result; rejects with the RcpError the client would get.
 * - `request(method, params)`: one JSON-RPC request through a stateless Session, as the HTTP
 *   transport serves it: resolves with the response frame and the notifications sent before it.
 */
import { ConfigSchema, type GatewayConfig } from '../../src/core/config/schema.js';
import { Gateway } from '../../src/core/gateway/gateway.js';
import type { FederationHooks } from '../../src/core/federation/context.js';
import { ErrorCode, RcpError } from '../../src/core/protocol/errors.js';
import type { JsonObject, NotificationMessage, ResponseMessage } from '../../src/core/protocol/jsonrpc.js';
import { parseRequestMeta } from '../../src/core/protocol/params.js';
import type { CallContext, LogEntry, ProgressUpdate } from '../../src/core/service/contract.js';
import { traceContext } from '../../src/core/protocol/trace.js';
import { Session } from '../../src/core/session/session.js';
import type { EngineHooks } from '../../src/core/upstream/engine.js';
import { inMemoryTransports } from '../../src/core/upstream/in-memory.js';
import { silentLogger } from '../../src/node/observability/log.js';
import type { FakeEngine } from './fake-engine.js';

export interface InProcessOptions {
  /** The config's `gateway` section (logLevel defaults to silent). */
  gateway?: Record<string, unknown>;
  /** Extra config per engine id (weight, priority, required, maxConcurrent, breaker, …). */
  engines?: Record<string, Record<string, unknown>>;
  hooks?: FederationHooks & EngineHooks;
}

export interface CallOptions {
  /** Cancels the call as a client's notifications/cancel would. */
  signal?: AbortSignal;
  /** Present = the client asked for progress (`_meta.progressToken`). */
  onProgress?: (update: ProgressUpdate) => void;
  /** Present = the client opted into logs (§17.1). */
  onLog?: (entry: LogEntry) => void;
  headers?: Readonly<Record<string, string>>;
}

export interface Exchange {
  response: ResponseMessage;
  /** Notifications written before the response (progress, logs), in order. */
  frames: NotificationMessage[];
}

export interface InProcessGateway {
  gateway: Gateway;
  config: GatewayConfig;
  call(method: string, params?: JsonObject, options?: CallOptions): Promise<JsonObject>;
  request(method: string, params?: JsonObject): Promise<Exchange>;
  /** `catalog/list` entries by engine id. */
  catalog(): Promise<Map<string, JsonObject & { _meta: JsonObject }>>;
  stop(): Promise<void>;
}

/** Build and start a gateway over `engines` (started: every engine has been initialized). */
export async function startInProcess(engines: readonly FakeEngine[], options: InProcessOptions = {}): Promise<InProcessGateway> {
  const byId = new Map(engines.map((engine) => [engine.id, engine]));
  const config = ConfigSchema.parse({
    engines: engines.map((engine) => ({
      id: engine.id,
      transport: 'http',
      // Never dialled: the in-memory transport serves the engine; the URL only satisfies the schema.
      url: `http://${engine.id}.in-memory.invalid/rcp`,
      ...options.engines?.[engine.id],
    })),
    gateway: { logLevel: 'silent', ...options.gateway },
  });
  const gateway = new Gateway(config, {
    logger: silentLogger(),
    ...(options.hooks ? { hooks: options.hooks } : {}),
    transports: inMemoryTransports((id) => byId.get(id)),
  });
  await gateway.start();
  const session = new Session(gateway, { transport: 'http', stateless: true });
  let nextId = 1;

  return {
    gateway,
    config,
    call: (method, params = {}, callOptions = {}) => callDirect(gateway, method, params, callOptions, nextId++),
    async request(method, params = {}) {
      const frames: NotificationMessage[] = [];
      const answer = await session.handle({ value: { jsonrpc: '2.0', id: nextId++, method, params }, sink: (frame) => frames.push(frame) });
      if (answer === null || Array.isArray(answer)) throw new Error(`expected one response to ${method}`);
      return { response: answer, frames };
    },
    async catalog() {
      const listed = await gateway.call(
        'catalog/list',
        {},
        contextFor(gateway, 'catalog/list', {}, {}, nextId++, new AbortController().signal),
      );
      const entries = listed.engines as Array<JsonObject & { id: string; _meta: JsonObject }>;
      return new Map(entries.map((entry) => [entry.id, entry]));
    },
    stop: () => gateway.stop(),
  };
}

/**
 * `gateway.call` with the deadline and cancel behaviour a Session gives a request: the signal
 * aborts with 'deadline' when the deadline passes; a cancel aborts it with 'cancel' and answers
 * -32006 at once (§7.14), whatever the gateway still does with the call.
 */
async function callDirect(
  gateway: Gateway,
  method: string,
  params: JsonObject,
  options: CallOptions,
  requestId: number,
): Promise<JsonObject> {
  const controller = new AbortController();
  const ctx = contextFor(gateway, method, params, options, requestId, controller.signal);
  const deadline = setTimeout(() => controller.abort('deadline'), ctx.deadlineMs);
  let onCancel = (): void => undefined;
  const cancelled = new Promise<never>((_, reject) => {
    onCancel = () => {
      controller.abort('cancel');
      reject(new RcpError(ErrorCode.Cancelled, 'cancelled'));
    };
  });
  if (options.signal?.aborted) onCancel();
  else options.signal?.addEventListener('abort', onCancel, { once: true });
  try {
    return await Promise.race([gateway.call(method, params, ctx), cancelled]);
  } finally {
    clearTimeout(deadline);
    options.signal?.removeEventListener('abort', onCancel);
  }
}

function contextFor(
  gateway: Gateway,
  method: string,
  params: JsonObject,
  options: CallOptions,
  requestId: number,
  signal: AbortSignal,
): CallContext {
  const meta = parseRequestMeta(params._meta);
  const deadlineMs = Math.max(0, Math.min(gateway.defaultDeadlineMs, meta.deadlineMs ?? Infinity));
  return {
    method,
    requestId,
    signal,
    deadlineAt: performance.now() + deadlineMs,
    deadlineMs,
    progress: options.onProgress,
    log: options.onLog,
    meta,
    trace: traceContext(options.headers ?? {}, meta.traceId),
    transport: 'http',
    headers: options.headers ?? {},
  };
}
