/**
 * Outbound HTTP transport: an undici Pool per engine (keep-alive, bounded connections), posting
 * JSON-RPC to `<url>/<method>` (§5.2). Asks for SSE when progress is wanted and parses it with
 * eventsource-parser. Bodies are always consumed or destroyed so sockets return to the pool.
 */
import type { Readable } from 'node:stream';
import { Pool } from 'undici';
import { createParser } from 'eventsource-parser';
import { isJsonObject, type JsonObject } from '../../core/protocol/jsonrpc.js';
import { UpstreamError } from '../../core/upstream/errors.js';
import { nextProgressToken, settleResponse, withProgressToken } from '../../core/upstream/frames.js';
import type { UpstreamCallOptions, UpstreamTransport } from '../../core/upstream/transport.js';

export interface HttpTransportOptions {
  url: string;
  connections: number;
  headers?: Readonly<Record<string, string>>;
}

export class HttpTransport implements UpstreamTransport {
  readonly kind = 'http' as const;
  private readonly pool: Pool;
  private readonly basePath: string;
  private nextId = 1;

  constructor(private readonly options: HttpTransportOptions) {
    const url = new URL(options.url);
    this.pool = new Pool(url.origin, {
      connections: options.connections,
      keepAliveTimeout: 30_000,
      pipelining: 1,
    });
    this.basePath = url.pathname.replace(/\/+$/, '');
  }

  call(method: string, params: JsonObject, options: UpstreamCallOptions): Promise<JsonObject> {
    const deadline = callSignal(options.signal, options.timeoutMs);
    const answer = this.exchange(method, params, options, deadline);
    answer.then(deadline.dispose, deadline.dispose);
    return answer;
  }

  private async exchange(method: string, params: JsonObject, options: UpstreamCallOptions, deadline: CallSignal): Promise<JsonObject> {
    const id = this.nextId++;
    // SSE (and a per-leg token) only for an engine that advertised `streaming` (§5.2, §9).
    const token = options.stream === true ? nextProgressToken() : undefined;
    const outParams = token === undefined ? params : withProgressToken(params, token);
    const body = JSON.stringify({ jsonrpc: '2.0', id, method, params: outParams });
    const { signal } = deadline;
    const failFromAbort = (): UpstreamError =>
      deadline.timedOut()
        ? new UpstreamError('timeout', `no answer within ${options.timeoutMs} ms`)
        : new UpstreamError('aborted', `call aborted (${String(options.signal?.reason ?? 'abort')})`);

    let response: Awaited<ReturnType<Pool['request']>>;
    try {
      response = await this.pool.request({
        path: `${this.basePath}/${method}`,
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: token !== undefined ? 'text/event-stream, application/json' : 'application/json',
          ...this.options.headers,
          ...options.headers,
        },
        body,
        signal,
      });
    } catch (err) {
      if (signal.aborted) throw failFromAbort();
      throw new UpstreamError('transport', `request failed: ${(err as Error).message}`);
    }

    try {
      const contentType = String(response.headers['content-type'] ?? '');
      if (response.statusCode !== 200) {
        const text = await readCapped(response.body, Math.min(options.maxResponseBytes, 65_536), signal).catch(() => '');
        throw statusFailure(response.statusCode, response.headers['retry-after'], text, id);
      }
      if (contentType.includes('text/event-stream')) {
        return await readSse(response.body, id, token, options, signal);
      }
      const text = await readCapped(response.body, options.maxResponseBytes, signal);
      return settleResponse(parseFrame(text), id);
    } catch (err) {
      response.body.destroy();
      if (err instanceof UpstreamError) throw err;
      if (signal.aborted) throw failFromAbort();
      throw new UpstreamError('transport', `reading answer failed: ${(err as Error).message}`);
    }
  }

  notify(method: string, params: JsonObject): void {
    const body = JSON.stringify({ jsonrpc: '2.0', method, params });
    this.pool
      .request({ path: `${this.basePath}/${method}`, method: 'POST', headers: { 'content-type': 'application/json', ...this.options.headers }, body })
      .then((res) => res.body.dump())
      .catch(() => undefined);
  }

  async close(): Promise<void> {
    await this.pool.close().catch(() => this.pool.destroy());
  }
}

interface CallSignal {
  signal: AbortSignal;
  timedOut: () => boolean;
  /** Clear the timer and unhook from the caller's signal once the call settled. */
  dispose: () => void;
}

/**
 * One AbortController per call, aborted by the caller's signal or the timeout, whichever comes
 * first. AbortSignal.timeout + AbortSignal.any did the same but build transferable, composite
 * signals: measurably more work on every upstream call.
 */
function callSignal(parent: AbortSignal | undefined, timeoutMs: number): CallSignal {
  const controller = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError'));
  }, timeoutMs);
  timer.unref();
  const onAbort = (): void => controller.abort(parent?.reason);
  if (parent?.aborted) onAbort();
  else parent?.addEventListener('abort', onAbort, { once: true });
  return {
    signal: controller.signal,
    timedOut: () => timedOut,
    dispose: () => {
      clearTimeout(timer);
      parent?.removeEventListener('abort', onAbort);
    },
  };
}

/** The whole body as text, refused past `maxBytes`; plain stream events (an async iterator costs more per answer). */
function readCapped(body: Readable, maxBytes: number, signal: AbortSignal): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    // The error listener stays: destroying an unfinished body emits 'error', which must not go unheard.
    const done = (): void => {
      body.off('data', onData);
      body.off('end', onEnd);
    };
    const onData = (chunk: Buffer | string): void => {
      const buf = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
      size += buf.byteLength;
      if (size > maxBytes) {
        done();
        body.destroy();
        reject(new UpstreamError('too-large', `answer exceeds ${maxBytes} bytes`));
        return;
      }
      chunks.push(buf);
    };
    const onEnd = (): void => {
      done();
      if (signal.aborted) reject(new Error('aborted'));
      else resolve((chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size)).toString('utf8'));
    };
    const onError = (err: Error): void => {
      done();
      reject(err); // no-op when already settled
    };
    body.on('data', onData);
    body.on('end', onEnd);
    body.on('error', onError);
  });
}

function parseFrame(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new UpstreamError('malformed', 'answer is not valid JSON');
  }
}

function statusFailure(status: number, retryAfter: unknown, text: string, id: number): UpstreamError {
  // A JSON-RPC body on a non-200 still tells us the code (§5.2 mirrors).
  try {
    settleResponse(JSON.parse(text), id);
  } catch (err) {
    if (err instanceof UpstreamError && err.reason === 'remote-error') return err;
  }
  const retryAfterMs = parseRetryAfter(retryAfter);
  if (status === 429) {
    return new UpstreamError('remote-error', 'rate limited (HTTP 429)', { code: -32011, message: 'rate limited' }, retryAfterMs);
  }
  if (status === 413) return new UpstreamError('remote-error', 'payload too large (HTTP 413)', { code: -32013, message: 'payload too large' });
  return new UpstreamError('transport', `HTTP ${status}`, undefined, retryAfterMs);
}

export function parseRetryAfter(value: unknown): number | undefined {
  const raw = Array.isArray(value) ? value[0] : value;
  if (typeof raw !== 'string' || raw.length === 0) return undefined;
  const seconds = Number(raw);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const date = Date.parse(raw);
  return Number.isFinite(date) ? Math.max(0, date - Date.now()) : undefined;
}

/**
 * An SSE answer: relay progress/log frames for this leg's token, resolve with the final
 * response frame. Driven by stream events (not an async iterator): one leg of a long-lived
 * stream then holds no suspended generator, iterator or pending read promise.
 */
function readSse(body: Readable, id: number, token: string | undefined, options: UpstreamCallOptions, signal: AbortSignal): Promise<JsonObject> {
  return new Promise((resolve, reject) => {
    const events = new SseEvents(token, options);
    let size = 0;
    let settled = false;
    const decoder = new TextDecoder();
    // The error listener stays after settling: destroying an unfinished body emits 'error'.
    const finish = (err: unknown, value?: JsonObject): void => {
      if (settled) return;
      settled = true;
      body.off('data', onData);
      body.off('end', onEnd);
      if (err !== undefined) reject(err);
      else resolve(value!);
    };
    const onData = (chunk: Buffer | string): void => {
      if (settled) return;
      if (signal.aborted) {
        body.destroy();
        return finish(new Error('aborted'));
      }
      const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
      size += bytes.byteLength;
      if (size > options.maxResponseBytes) {
        body.destroy();
        return finish(new UpstreamError('too-large', `answer exceeds ${options.maxResponseBytes} bytes`));
      }
      try {
        events.parser.feed(decoder.decode(bytes, { stream: true }));
      } catch (err) {
        body.destroy();
        return finish(err); // a relay callback threw: fail this leg, never the process
      }
      if (events.failure) {
        body.destroy();
        return finish(events.failure);
      }
      if (events.final !== undefined) {
        body.destroy(); // anything after the final frame is ignored
        try {
          finish(undefined, settleResponse(events.final, id));
        } catch (err) {
          finish(err);
        }
      }
    };
    const onEnd = (): void => {
      finish(signal.aborted ? new Error('aborted') : new UpstreamError('malformed', 'SSE stream ended without a final response frame'));
    };
    body.on('data', onData);
    body.on('end', onEnd);
    body.on('error', (err: Error) => finish(err));
  });
}

/**
 * The events of one SSE answer: progress frames for this leg's token and log frames are relayed
 * as they come; the response frame is kept as `final`; a frame that is not JSON is a `failure`.
 */
class SseEvents {
  final: unknown;
  failure: UpstreamError | undefined;
  readonly parser = createParser({ onEvent: (event) => this.onEvent(event.data) });

  constructor(
    private readonly token: string | undefined,
    private readonly options: UpstreamCallOptions,
  ) {}

  private onEvent(data: string): void {
    if (this.final !== undefined || this.failure) return;
    let frame: unknown;
    try {
      frame = JSON.parse(data);
    } catch {
      this.failure = new UpstreamError('malformed', 'SSE frame is not valid JSON');
      return;
    }
    if (!isJsonObject(frame)) return;
    if (frame.method === 'notifications/progress' && isJsonObject(frame.params)) {
      // Frames for other tokens are ignored (§9).
      if (this.token !== undefined && frame.params.progressToken === this.token) this.options.onProgress?.(frame.params);
      return;
    }
    if (frame.method === 'notifications/log' && isJsonObject(frame.params)) {
      this.options.onLog?.(frame.params);
      return;
    }
    if ('result' in frame || 'error' in frame) this.final = frame;
  }
}
