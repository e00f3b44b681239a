/**
 * Outbound HTTP transport: an undici Pool per engine (keep-alive, bounded connections), posting
 * JSON-RPC to `<url>/<method>` (§5.2). Asks for SSE when progress is wanted and parses it with
 * eventsource-parser. Bodies are always consumed or destroyed so sockets return to the pool.
 */
import type { Readable } from 'node:stream';
import { Pool } from 'undici';
import type { JsonObject } from '../../core/protocol/jsonrpc.js';
import { methodUrlPath } from '../../core/protocol/methods.js';
import { ByteBudget, type BudgetHold } from './byte-budget.js';
import { callSignal, type CallSignal } from '../../core/upstream/call-signal.js';
import { UpstreamError } from '../../core/upstream/errors.js';
import { nextProgressToken, settleResponse, withProgressToken } from '../../core/upstream/frames.js';
import { STATUS_BODY_BYTES, parseFrame, statusFailure } from '../../core/upstream/http-answer.js';
import { SseEvents } from '../../core/upstream/sse-events.js';
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
        path: `${this.basePath}/${methodUrlPath(method)}`,
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

    // Bytes of this answer held in memory, counted against the gateway-wide budget until parsed.
    const hold = (this.options.budget ?? UNBOUNDED).open();
    try {
      const contentType = String(response.headers['content-type'] ?? '');
      if (response.statusCode !== 200) {
        const text = await readCapped(response.body, Math.min(options.maxResponseBytes, STATUS_BODY_BYTES), signal, hold).catch(() => '');
        throw statusFailure(response.statusCode, response.headers['retry-after'], text, id);
      }
      if (contentType.includes('text/event-stream')) {
        return await readSse(response.body, id, token, options, signal, hold);
      }
      const text = await readCapped(response.body, options.maxResponseBytes, signal, hold);
      return settleResponse(parseFrame(text), id);
    } catch (err) {
      response.body.destroy();
      if (err instanceof UpstreamError) throw err;
      if (signal.aborted) throw failFromAbort();
      throw new UpstreamError('transport', `reading answer failed: ${(err as Error).message}`);
    } finally {
      hold.free();
    }
  }

  notify(method: string, params: JsonObject): void {
    const body = JSON.stringify({ jsonrpc: '2.0', method, params });
    this.pool
      .request({
        path: `${this.basePath}/${methodUrlPath(method)}`,
        method: 'POST',
        headers: { 'content-type': 'application/json', ...this.options.headers },
        body,
      })
      .then((res) => res.body.dump())
      .catch(() => undefined);
  }

  async close(): Promise<void> {
    await this.pool.close().catch(() => this.pool.destroy());
  }
}

const UNBOUNDED = new ByteBudget(Number.POSITIVE_INFINITY);

function budgetExceeded(): UpstreamError {
  return new UpstreamError('too-large', 'the gateway-wide cap on buffered engine answers (maxBufferedUpstreamBytes) was reached');
}

/** The whole body as text, refused past `maxBytes` or the shared budget; plain stream events (an async iterator costs more per answer). */
function readCapped(body: Readable, maxBytes: number, signal: AbortSignal, hold: BudgetHold): Promise<string> {
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
      const overBudget = size <= maxBytes && !hold.take(buf.byteLength);
      if (size > maxBytes || overBudget) {
        done();
        body.destroy();
        reject(overBudget ? budgetExceeded() : new UpstreamError('too-large', `answer exceeds ${maxBytes} bytes`));
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

/**
 * An SSE answer: relay progress/log frames for this leg's token, resolve with the final
 * response frame. Driven by stream events (not an async iterator): one leg of a long-lived
 * stream then holds no suspended generator, iterator or pending read promise.
 */
function readSse(
  body: Readable,
  id: number,
  token: string | undefined,
  options: UpstreamCallOptions,
  signal: AbortSignal,
  hold: BudgetHold,
): Promise<JsonObject> {
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
      if (!hold.take(bytes.byteLength)) {
        body.destroy();
        return finish(budgetExceeded());
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
