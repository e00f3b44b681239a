/**
 * An in-process transport pair: on the engine side a core `Session` over any `RcpService`, so
 * the engine obeys the §13 lifecycle (initialize first), §4.7 ids and §7.14 cancel exactly as a
 * server built on this core does; on the gateway side an `UpstreamTransport`. Every frame crosses
 * as JSON text, so the two sides never share an object, an answer's size is its wire size, and a
 * value JSON cannot carry fails here as it would on a socket.
 *
 * Used for engines embedded in the same process and by the in-process test tier. Web-standard
 * only (timers, AbortSignal, TextEncoder): no runtime-specific imports.
 */
import { isJsonObject, type JsonObject, type NotificationMessage, type ResponseMessage } from '../protocol/jsonrpc.js';
import type { RcpService } from '../service/contract.js';
import { Session } from '../session/session.js';
import { UpstreamError, abortedCall } from './errors.js';
import { nextProgressToken, withProgressToken } from './frames.js';
import { type TransportFactory, type UpstreamCallOptions, type UpstreamTransport } from './transport.js';

export interface InMemoryTransportOptions {
  /** What the engine looks like to the gateway (catalog, metrics); it changes nothing on the wire. */
  kind?: 'http' | 'stdio';
}

const encoder = new TextEncoder();

export class InMemoryTransport implements UpstreamTransport {
  readonly kind: 'http' | 'stdio';
  private readonly session: Session;
  private nextId = 1;
  private closed = false;
  /** Calls still waiting for their answer, failed at once when the transport closes. */
  private readonly inFlight = new Set<(err: UpstreamError) => void>();

  constructor(service: RcpService, options: InMemoryTransportOptions = {}) {
    this.kind = options.kind ?? 'stdio';
    // Stateful like a stdio connection: the engine side holds the lifecycle and the client's log wish.
    this.session = new Session(service, { transport: this.kind, stateless: false });
  }

  call(method: string, params: JsonObject, options: UpstreamCallOptions): Promise<JsonObject> {
    if (this.closed) return Promise.reject(new UpstreamError('transport', 'in-memory transport is closed'));
    if (options.signal?.aborted) return Promise.reject(new UpstreamError('aborted', 'call aborted before it was sent'));
    const id = this.nextId++;
    // A per-leg token routes this call's progress and token-tagged logs back to it (§9, §17.1).
    const token = options.stream === true || options.onLog !== undefined ? nextProgressToken() : undefined;
    const outParams = token === undefined ? params : withProgressToken(params, token);
    let request: unknown;
    try {
      request = overTheWire({ jsonrpc: '2.0', id, method, params: outParams });
    } catch (err) {
      return Promise.reject(new UpstreamError('transport', `request cannot be sent as JSON: ${(err as Error).message}`));
    }

    return new Promise<JsonObject>((resolve, reject) => {
      let settled = false;
      const finish = (): boolean => {
        if (settled) return false;
        settled = true;
        clearTimeout(timer);
        options.signal?.removeEventListener('abort', onAbort);
        this.inFlight.delete(abandon);
        return true;
      };
      const abandon = (err: UpstreamError): void => {
        if (!finish()) return;
        // §7.14: tell the engine to stop; its late answer then belongs to no call and is dropped.
        this.notify('notifications/cancel', { id, reason: err.reason });
        reject(err);
      };
      const onAbort = (): void => abandon(abortedCall(options.signal));
      const timer = setTimeout(() => abandon(new UpstreamError('timeout', `no answer within ${options.timeoutMs} ms`)), options.timeoutMs);
      options.signal?.addEventListener('abort', onAbort, { once: true });
      this.inFlight.add(abandon);

      const sink = (frame: NotificationMessage): void => {
        if (!settled) deliverNotification(overTheWire(frame) as NotificationMessage, token, options);
      };
      this.session.handle({ value: request, sink }).then(
        (answer) => {
          if (!finish()) return;
          try {
            resolve(settleAnswer(answer, id, options.maxResponseBytes));
          } catch (err) {
            reject(err instanceof UpstreamError ? err : new UpstreamError('malformed', (err as Error).message));
          }
        },
        (err: unknown) => {
          if (finish()) reject(new UpstreamError('transport', `engine session failed: ${(err as Error).message}`));
        },
      );
    });
  }

  notify(method: string, params: JsonObject): void {
    if (this.closed) return;
    void this.session.handle({ value: overTheWire({ jsonrpc: '2.0', method, params }) });
  }

  /** Fail every call still waiting and abort the engine's work on them, like a closed connection. */
  close(): Promise<void> {
    if (this.closed) return Promise.resolve();
    this.closed = true;
    for (const abandon of [...this.inFlight]) abandon(new UpstreamError('transport', 'in-memory transport closed'));
    this.session.abortAll('shutdown');
    return Promise.resolve();
  }
}

/**
 * A `TransportFactory` serving each configured engine from the service `serviceFor` returns for
 * its id. An engine id with no service is a wiring mistake, reported when the gateway is built.
 */
export function inMemoryTransports(serviceFor: (engineId: string) => RcpService | undefined): TransportFactory {
  return (config) => {
    const service = serviceFor(config.id);
    if (!service) throw new Error(`no in-memory service for engine "${config.id}"`);
    return new InMemoryTransport(service, { kind: config.transport === 'http' ? 'http' : 'stdio' });
  };
}

/** The value as the other side would decode it from JSON text. */
function overTheWire(value: unknown): unknown {
  return JSON.parse(JSON.stringify(value)) as unknown;
}

/** Progress for this call's token only (§9); logs to the call's log handler (§17.1). */
function deliverNotification(frame: NotificationMessage, token: string | undefined, options: UpstreamCallOptions): void {
  const params = isJsonObject(frame.params) ? frame.params : {};
  if (frame.method === 'notifications/progress') {
    if (token !== undefined && params.progressToken === token) options.onProgress?.(params);
  } else if (frame.method === 'notifications/log') {
    options.onLog?.(params);
  }
}

/** The engine's answer → its result, or the failure it stands for; the size bound is on the JSON text. */
function settleAnswer(answer: ResponseMessage | ResponseMessage[] | null, id: number, maxResponseBytes: number): JsonObject {
  let text: string;
  try {
    text = JSON.stringify(answer);
  } catch {
    throw new UpstreamError('malformed', 'answer cannot be written as JSON');
  }
  if (encoder.encode(text).byteLength > maxResponseBytes) throw new UpstreamError('too-large', `answer exceeds ${maxResponseBytes} bytes`);
  const frame = JSON.parse(text) as unknown;
  if (!isJsonObject(frame) || frame.jsonrpc !== '2.0') throw new UpstreamError('malformed', 'answer is not a JSON-RPC 2.0 response');
  if (frame.id !== id) throw new UpstreamError('malformed', 'answer carries an unknown id');
  if (isJsonObject(frame.error)) {
    const code = typeof frame.error.code === 'number' ? frame.error.code : -32603;
    const message = typeof frame.error.message === 'string' ? frame.error.message : 'error';
    const data = isJsonObject(frame.error.data) ? frame.error.data : undefined;
    const retryAfterMs = typeof data?.retryAfterMs === 'number' && Number.isFinite(data.retryAfterMs) ? data.retryAfterMs : undefined;
    throw new UpstreamError('remote-error', message, { code, message, ...(data ? { data } : {}) }, retryAfterMs);
  }
  if (!isJsonObject(frame.result)) throw new UpstreamError('malformed', 'answer has no result object');
  return frame.result;
}
