/**
 * Outbound HTTP transport on the web-standard fetch API, for runtimes without undici (workerd,
 * Deno, Bun; Node has fetch too). Posts JSON-RPC to `<url>/<method>` (§5.2); asks for SSE when
 * progress is wanted and reads it off the body's ReadableStream with eventsource-parser. The byte
 * cap is enforced while reading: the body is cancelled the moment an answer grows past it. Every
 * failure carries the same reason as on the undici transport (node/upstream/http.ts), so the
 * breaker, retries and degraded answers behave alike on every runtime.
 *
 * fetch has no connection pool to size: the engine's limiter (`maxConcurrent`) bounds how many
 * calls are open at once, and the runtime reuses connections as it sees fit.
 */
import type { JsonObject } from '../protocol/jsonrpc.js';
import { isWellFormedMethodName, methodUrlPath } from '../protocol/methods.js';
import { callSignal, type CallSignal } from './call-signal.js';
import { UpstreamError, abortedCall } from './errors.js';
import { nextProgressToken, settleResponse, withProgressToken } from './frames.js';
import { STATUS_BODY_BYTES, parseFrame, statusFailure } from './http-answer.js';
import { SseEvents } from './sse-events.js';
import type { UpstreamCallOptions, UpstreamTransport } from './transport.js';

export interface FetchTransportOptions {
  url: string;
  headers?: Readonly<Record<string, string>>;
  /** The fetch to call (default: the runtime's global one). */
  fetch?: typeof fetch;
  /**
   * Handed every call's and notification's settlement. A runtime that drops work no request is
   * waiting for (workerd ends a request's I/O once it has answered) keeps the exchange alive
   * with it, e.g. an engine re-initialized between two client requests.
   */
  keepAlive?: (settled: Promise<unknown>) => void;
}

export class FetchTransport implements UpstreamTransport {
  readonly kind = 'http' as const;
  private readonly endpoint: string;
  private readonly fetch: typeof fetch;
  private nextId = 1;
  private closed = false;

  constructor(private readonly options: FetchTransportOptions) {
    this.endpoint = options.url.replace(/\/+$/, '');
    // Called unbound: some runtimes (workerd) refuse a fetch invoked with another `this`.
    const chosen = options.fetch ?? globalThis.fetch;
    this.fetch = (input, init) => chosen(input, init);
  }

  call(method: string, params: JsonObject, options: UpstreamCallOptions): Promise<JsonObject> {
    // As an undici pool once closed: later calls fail as the transport, not as the engine's answer.
    if (this.closed) return Promise.reject(new UpstreamError('transport', 'request failed: transport is closed'));
    const deadline = callSignal(options.signal, options.timeoutMs);
    const answer = this.exchange(method, params, options, deadline);
    const settled = answer.then(deadline.dispose, deadline.dispose);
    this.options.keepAlive?.(settled);
    return answer;
  }

  private async exchange(method: string, params: JsonObject, options: UpstreamCallOptions, deadline: CallSignal): Promise<JsonObject> {
    const url = `${this.endpoint}/${methodUrlPath(method)}`;
    const id = this.nextId++;
    // SSE (and a per-leg token) only for an engine that advertised `streaming` (§5.2, §9).
    const token = options.stream === true ? nextProgressToken() : undefined;
    const outParams = token === undefined ? params : withProgressToken(params, token);
    const { signal } = deadline;
    const failFromAbort = (): UpstreamError =>
      deadline.timedOut() ? new UpstreamError('timeout', `no answer within ${options.timeoutMs} ms`) : abortedCall(options.signal);

    let response: Response;
    try {
      response = await this.fetch(url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: token !== undefined ? 'text/event-stream, application/json' : 'application/json',
          ...this.options.headers,
          ...options.headers,
        },
        body: JSON.stringify({ jsonrpc: '2.0', id, method, params: outParams }),
        signal,
      });
    } catch (err) {
      if (signal.aborted) throw failFromAbort();
      throw new UpstreamError('transport', `request failed: ${describe(err)}`);
    }

    try {
      if (response.status !== 200) {
        const text = await readCapped(response.body, Math.min(options.maxResponseBytes, STATUS_BODY_BYTES)).catch(() => '');
        throw statusFailure(response.status, response.headers.get('retry-after') ?? undefined, text, id);
      }
      if ((response.headers.get('content-type') ?? '').includes('text/event-stream')) {
        return await readSse(response.body, id, token, options, signal);
      }
      const text = await readCapped(response.body, options.maxResponseBytes);
      if (signal.aborted) throw failFromAbort();
      return settleResponse(parseFrame(text), id);
    } catch (err) {
      if (err instanceof UpstreamError) throw err;
      if (signal.aborted) throw failFromAbort();
      throw new UpstreamError('transport', `reading answer failed: ${describe(err)}`);
    }
  }

  notify(method: string, params: JsonObject): void {
    // A notification is fire-and-forget (§4.5): one whose name makes no path is not sent.
    if (!isWellFormedMethodName(method)) return;
    const sent = this.fetch(`${this.endpoint}/${methodUrlPath(method)}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...this.options.headers },
      body: JSON.stringify({ jsonrpc: '2.0', method, params }),
    })
      .then((res) => res.body?.cancel())
      .catch(() => undefined);
    this.options.keepAlive?.(sent);
  }

  close(): Promise<void> {
    // Nothing to release: fetch owns its connections. Calls still running finish on their own.
    this.closed = true;
    return Promise.resolve();
  }
}

/** An error's message, with its cause (fetch reports "fetch failed" and puts ECONNREFUSED there). */
function describe(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const cause = err.cause instanceof Error ? err.cause.message : undefined;
  return cause && cause !== err.message ? `${err.message} (${cause})` : err.message;
}

/**
 * Feed the body's chunks to `visit` until it ends, `visit` returns false (enough read) or throws.
 * Any early stop cancels the body, so the connection is closed rather than left half-read.
 */
async function eachChunk(body: ReadableStream<Uint8Array> | null, visit: (chunk: Uint8Array) => boolean): Promise<void> {
  if (!body) return;
  const reader = body.getReader();
  let finished = false;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) {
        finished = true;
        return;
      }
      if (!visit(value)) return;
    }
  } finally {
    if (!finished) reader.cancel().catch(() => undefined);
  }
}

/** The whole body as text, refused (and cancelled) as soon as it exceeds `maxBytes`. */
async function readCapped(body: ReadableStream<Uint8Array> | null, maxBytes: number): Promise<string> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  await eachChunk(body, (chunk) => {
    size += chunk.byteLength;
    if (size > maxBytes) throw new UpstreamError('too-large', `answer exceeds ${maxBytes} bytes`);
    chunks.push(chunk);
    return true;
  });
  return utf8(chunks, size);
}

const utf8Decoder = new TextDecoder(); // as Response.text(): invalid bytes → U+FFFD

function utf8(chunks: readonly Uint8Array[], size: number): string {
  if (chunks.length === 1) return utf8Decoder.decode(chunks[0]);
  const whole = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    whole.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return utf8Decoder.decode(whole);
}

/**
 * An SSE answer: relay progress/log frames for this leg's token, settle with the final response
 * frame, and stop reading there (anything after the final frame is ignored).
 */
async function readSse(
  body: ReadableStream<Uint8Array> | null,
  id: number,
  token: string | undefined,
  options: UpstreamCallOptions,
  signal: AbortSignal,
): Promise<JsonObject> {
  const events = new SseEvents(token, options);
  let size = 0;
  const decoder = new TextDecoder();
  await eachChunk(body, (chunk) => {
    size += chunk.byteLength;
    if (size > options.maxResponseBytes) throw new UpstreamError('too-large', `answer exceeds ${options.maxResponseBytes} bytes`);
    // A relay callback that throws fails this leg (the caller maps it), never the process.
    events.parser.feed(decoder.decode(chunk, { stream: true }));
    if (events.failure) throw events.failure;
    return events.final === undefined;
  });
  if (events.final === undefined) {
    if (signal.aborted) throw new Error('aborted');
    throw new UpstreamError('malformed', 'SSE stream ended without a final response frame');
  }
  return settleResponse(events.final, id);
}
