/**
 * Reading one engine answer straight off undici's dispatcher (`Pool.dispatch`): the handler sees
 * the status, the headers and each body chunk as they arrive and settles the call itself. This
 * is the transport's hot path: `Pool.request` would wrap every call in a request handler, an
 * async resource and a readable body stream, and the call would need its own AbortController to
 * be cancelled; here a leg costs one handler object and one timer (bench/RESULTS.md, CPU diet).
 *
 * - 200 with a JSON body: the whole body (capped at `maxResponseBytes` and the gateway-wide
 *   byte budget) parsed as the JSON-RPC answer for `id`.
 * - 200 with `text/event-stream`: progress and log frames relayed as they come (SseEvents), the
 *   response frame settles the call and the rest of the stream is cut (§5.2, §9).
 * - anything else: at most STATUS_BODY_BYTES read to look for a JSON-RPC error (statusFailure).
 *
 * Every way out settles exactly once; once settled, the request is aborted if undici still has
 * it, so the socket never carries a half-read answer back into the pool.
 */
import { StringDecoder } from 'node:string_decoder';
import type { Dispatcher } from 'undici';
import type { JsonObject } from '../../core/protocol/jsonrpc.js';
import { UpstreamError } from '../../core/upstream/errors.js';
import { settleResponse } from '../../core/upstream/frames.js';
import { STATUS_BODY_BYTES, parseFrame, statusFailure } from '../../core/upstream/http-answer.js';
import { SseEvents } from '../../core/upstream/sse-events.js';
import type { UpstreamCallOptions } from '../../core/upstream/transport.js';
import type { BudgetHold } from './byte-budget.js';

type Mode = 'json' | 'sse' | 'status';

const CONTENT_TYPE = 'content-type';
const RETRY_AFTER = 'retry-after';

export interface AnswerSettle {
  resolve(result: JsonObject): void;
  reject(err: UpstreamError | Error): void;
}

export class AnswerReader implements Dispatcher.DispatchHandler {
  private abortRequest: ((err: Error) => void) | undefined;
  private settled = false;
  /** Whether the engine started answering (its status line arrived): failures after it are read failures. */
  private answering = false;
  private mode: Mode = 'json';
  private status = 0;
  private retryAfter: string | undefined;
  private limit: number;
  private size = 0;
  private readonly chunks: Buffer[] = [];
  private sse: { events: SseEvents; decoder: StringDecoder } | undefined;

  constructor(
    private readonly id: number,
    private readonly token: string | undefined,
    private readonly options: UpstreamCallOptions,
    private readonly hold: BudgetHold,
    private readonly settle: AnswerSettle,
  ) {
    this.limit = options.maxResponseBytes;
  }

  /** Settle the call as failed (also from outside: timeout, the caller's abort) and drop the request. */
  fail(err: UpstreamError): void {
    if (!this.finish()) return;
    this.settle.reject(err);
    this.drop();
  }

  onConnect(abort: (err?: Error) => void): void {
    this.abortRequest = abort;
    if (this.settled) abort(new Error('settled before it was sent'));
  }

  onHeaders(statusCode: number, rawHeaders: Buffer[]): boolean {
    if (this.settled) return true;
    // undici hands informational answers (103 Early Hints, …) to the handler too; the real answer
    // follows on the same request. Taking one for the answer made a later 200 fail as "HTTP 200".
    if (statusCode < 200) return true;
    this.answering = true;
    this.status = statusCode;
    let contentType = '';
    for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
      // Only two names matter; a name of another length is neither, so it is never decoded
      // (an engine's answer carries five or so headers, and each decoding is a native call).
      const raw = rawHeaders[i]!;
      if (raw.length !== CONTENT_TYPE.length && raw.length !== RETRY_AFTER.length) continue;
      const name = raw.toString('latin1').toLowerCase();
      if (name === CONTENT_TYPE) contentType = rawHeaders[i + 1]!.toString('latin1');
      else if (name === RETRY_AFTER) this.retryAfter = rawHeaders[i + 1]!.toString('latin1');
    }
    if (statusCode !== 200) {
      this.mode = 'status';
      this.limit = Math.min(this.limit, STATUS_BODY_BYTES);
    } else if (contentType.includes('text/event-stream')) {
      this.mode = 'sse';
      this.sse = { events: new SseEvents(this.token, this.options), decoder: new StringDecoder('utf8') };
    }
    return true;
  }

  // Always `true`: for undici `false` means "pause the socket", not "stop"; a call that is done
  // with the answer drops the request instead (drop()).
  onData(chunk: Buffer): boolean {
    if (this.settled) return true;
    this.size += chunk.byteLength;
    if (this.size > this.limit) {
      // A non-200 body past what we look at: its status alone names the failure.
      if (this.mode === 'status') this.failWithStatus();
      else this.fail(new UpstreamError('too-large', `answer exceeds ${this.limit} bytes`));
    } else if (!this.hold.take(chunk.byteLength)) {
      this.fail(new UpstreamError('too-large', 'the gateway-wide cap on buffered engine answers (maxBufferedUpstreamBytes) was reached'));
    } else if (this.sse) {
      this.feedSse(chunk, this.sse);
    } else {
      this.chunks.push(chunk);
    }
    return true;
  }

  onComplete(): void {
    if (this.settled) return;
    if (this.mode === 'status') {
      this.failWithStatus();
      return;
    }
    if (this.mode === 'sse') {
      this.fail(new UpstreamError('malformed', 'SSE stream ended without a final response frame'));
      return;
    }
    const text = this.text();
    this.finish();
    try {
      this.settle.resolve(settleResponse(parseFrame(text), this.id));
    } catch (err) {
      this.settle.reject(err as Error);
    }
  }

  onError(err: Error): void {
    if (this.settled) return;
    const phase = this.answering ? 'reading answer failed' : 'request failed';
    if (this.finish()) this.settle.reject(new UpstreamError('transport', `${phase}: ${err.message}`));
  }

  private feedSse(chunk: Buffer, sse: { events: SseEvents; decoder: StringDecoder }): void {
    const { events } = sse;
    try {
      events.parser.feed(sse.decoder.write(chunk));
    } catch (err) {
      // A relay callback threw: this leg fails, never the process.
      if (!this.finish()) return;
      this.settle.reject(err instanceof Error ? err : new Error(String(err)));
      this.drop();
      return;
    }
    if (events.failure) return this.fail(events.failure);
    if (events.final === undefined || !this.finish()) return;
    try {
      this.settle.resolve(settleResponse(events.final, this.id));
    } catch (err) {
      this.settle.reject(err as Error);
    }
    this.drop(); // anything after the final frame is ignored
  }

  private failWithStatus(): void {
    this.fail(statusFailure(this.status, this.retryAfter, this.text(), this.id));
  }

  private text(): string {
    const { chunks } = this;
    // `size` also counts a chunk refused past the cap: the length comes from what was kept.
    return (chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)).toString('utf8');
  }

  /** Mark settled (false when it already was); free the held bytes; drop the request if undici still has it. */
  private finish(): boolean {
    if (this.settled) return false;
    this.settled = true;
    this.hold.free();
    this.chunks.length = 0;
    return true;
  }

  /** Abort what undici still holds of this request (no-op once it completed): a half-read answer never goes back to the pool. */
  private drop(): void {
    this.abortRequest?.(new Error('call settled'));
  }
}
