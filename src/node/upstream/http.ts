/**
 * Outbound HTTP transport: an undici Pool per engine (keep-alive, bounded connections), posting
 * JSON-RPC to `<url>/<method>` (§5.2), asking for SSE when progress is wanted. Each call is
 * dispatched with its own answer reader (answer-reader.ts), which parses JSON or SSE as it
 * arrives and drops the request once it is settled, so sockets return to the pool clean.
 */
import { Pool } from 'undici';
import type { JsonObject } from '../../core/protocol/jsonrpc.js';
import { isWellFormedMethodName, methodUrlPath } from '../../core/protocol/methods.js';
import { shallowCopy } from '../../core/protocol/copy.js';
import { AnswerReader } from './answer-reader.js';
import { ByteBudget } from './byte-budget.js';
import { UpstreamError, abortedCall } from '../../core/upstream/errors.js';
import { nextProgressToken, withProgressToken } from '../../core/upstream/frames.js';
import type { UpstreamCallOptions, UpstreamTransport } from '../../core/upstream/transport.js';

export interface HttpTransportOptions {
  url: string;
  connections: number;
  headers?: Readonly<Record<string, string>>;
  /** The gateway-wide budget of answer bytes held at once; absent = only the per-answer cap. */
  budget?: ByteBudget;
}

export class HttpTransport implements UpstreamTransport {
  readonly kind = 'http' as const;
  private readonly pool: Pool;
  private readonly basePath: string;
  private nextId = 1;
  private readonly jsonHeaders: Record<string, string>;
  private readonly streamHeaders: Record<string, string>;

  constructor(private readonly options: HttpTransportOptions) {
    const url = new URL(options.url);
    this.pool = new Pool(url.origin, {
      connections: options.connections,
      keepAliveTimeout: 30_000,
      pipelining: 1,
    });
    this.basePath = url.pathname.replace(/\/+$/, '');
    this.jsonHeaders = { 'content-type': 'application/json', accept: 'application/json', ...options.headers };
    this.streamHeaders = { 'content-type': 'application/json', accept: 'text/event-stream, application/json', ...options.headers };
  }

  call(method: string, params: JsonObject, options: UpstreamCallOptions): Promise<JsonObject> {
    const { signal } = options;
    if (signal?.aborted) return Promise.reject(abortedCall(signal));
    const id = this.nextId++;
    // SSE (and a per-leg token) only for an engine that advertised `streaming` (§5.2, §9).
    const token = options.stream === true ? nextProgressToken() : undefined;
    const outParams = token === undefined ? params : withProgressToken(params, token);
    return new Promise<JsonObject>((resolve, reject) => {
      // Inside the executor: a name that makes no path (methodUrlPath) or params JSON cannot carry
      // (a BigInt, a cycle) rejects the call with that error, before anything is sent.
      const path = this.pathOf(method);
      const body = JSON.stringify({ jsonrpc: '2.0', id, method, params: outParams });
      // Bytes of this answer held in memory, counted against the gateway-wide budget until parsed.
      const hold = (this.options.budget ?? UNBOUNDED).open();
      const done = (): void => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
      };
      const reader = new AnswerReader(id, token, options, hold, {
        resolve: (result) => {
          done();
          resolve(result);
        },
        reject: (err) => {
          done();
          reject(err);
        },
      });
      const onAbort = (): void => reader.fail(abortedCall(signal));
      const timer = setTimeout(
        () => reader.fail(new UpstreamError('timeout', `no answer within ${options.timeoutMs} ms`)),
        options.timeoutMs,
      );
      // Node: a pending call timer must not keep a finished process alive.
      timer.unref();
      signal?.addEventListener('abort', onAbort, { once: true });
      // The engine's fixed headers made once (constructor); this call's own (traceparent) set on a copy.
      const headers = shallowCopy(token !== undefined ? this.streamHeaders : this.jsonHeaders);
      for (const name in options.headers) headers[name] = options.headers[name]!;
      try {
        this.pool.dispatch({ path, method: 'POST', headers, body }, reader);
      } catch (err) {
        reader.onError(err as Error);
      }
    });
  }

  notify(method: string, params: JsonObject): void {
    // A notification is fire-and-forget (§4.5): one whose name makes no path is not sent.
    if (!isWellFormedMethodName(method)) return;
    const body = JSON.stringify({ jsonrpc: '2.0', method, params });
    this.pool
      .request({
        path: this.pathOf(method),
        method: 'POST',
        headers: { 'content-type': 'application/json', ...this.options.headers },
        body,
        // A notification (notifications/cancel, sent mostly to engines that are slow or hung) would
        // otherwise hold its pooled connection until undici's 300 s defaults, starving the calls.
        signal: AbortSignal.timeout(NOTIFY_TIMEOUT_MS),
      })
      .then((res) => res.body.dump())
      .catch(() => undefined);
  }

  private pathOf(method: string): string {
    return `${this.basePath}/${methodUrlPath(method)}`;
  }

  async close(): Promise<void> {
    await this.pool.close().catch(() => this.pool.destroy());
  }
}

const UNBOUNDED = new ByteBudget(Number.POSITIVE_INFINITY);

/** How long a fire-and-forget notification may hold a connection: it gets no JSON-RPC answer (§4.5), only an HTTP status. */
const NOTIFY_TIMEOUT_MS = 5_000;
