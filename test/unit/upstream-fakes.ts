/**
 * In-process stand-ins for the upstream layer tests: a fake transport whose answers the test
 * controls (and a held one whose calls wait for the test and fail when aborted), a deferred answer, and an UpstreamCall with a deadline on the (fake) clock.
 */
import type { JsonObject } from '../../src/core/protocol/jsonrpc.js';
import type { Call, UpstreamCall } from '../../src/core/upstream/call.js';
import type { UpstreamCallOptions, UpstreamTransport } from '../../src/core/upstream/transport.js';
import type { BreakerSettings } from '../../src/core/config/schema.js';
import type { Logger } from '../../src/core/observability/logger.js';
import { UpstreamError } from '../../src/core/upstream/errors.js';

export interface Deferred<T> {
  promise: Promise<T>;
  resolve: (value: T) => void;
  reject: (err: unknown) => void;
}

export function deferred<T>(): Deferred<T> {
  let resolve!: (value: T) => void;
  let reject!: (err: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

export interface Sent {
  method: string;
  params: JsonObject;
  options: UpstreamCallOptions;
}

/** A transport that records every call and answers with `answer` (default: `{ ok: true }`). */
export class FakeTransport implements UpstreamTransport {
  readonly kind = 'http' as const;
  readonly sent: Sent[] = [];
  readonly notified: Array<{ method: string; params: JsonObject }> = [];
  closed = false;

  constructor(public answer: (sent: Sent) => Promise<JsonObject> = () => Promise.resolve({ ok: true })) {}

  call(method: string, params: JsonObject, options: UpstreamCallOptions): Promise<JsonObject> {
    const sent = { method, params, options };
    this.sent.push(sent);
    return this.answer(sent);
  }

  notify(method: string, params: JsonObject): void {
    this.notified.push({ method, params });
  }

  close(): Promise<void> {
    this.closed = true;
    return Promise.resolve();
  }
}

/** A transport whose every call waits for the test, and fails as aborted when its signal fires. */
export class HeldTransport extends FakeTransport {
  readonly held: Array<Deferred<JsonObject> & { sent: Sent; aborted: () => boolean }> = [];
  constructor() {
    super((sent) => {
      const answer = deferred<JsonObject>();
      let aborted = false;
      sent.options.signal?.addEventListener('abort', () => {
        aborted = true;
        answer.reject(new UpstreamError('aborted', 'call aborted'));
      });
      this.held.push({ ...answer, sent, aborted: () => aborted });
      return answer.promise;
    });
  }
}

/** The innermost call of a pipeline as a recorder: what reached "the transport". */
export function recordingSend(
  answer: (call: UpstreamCall) => Promise<JsonObject> = () => Promise.resolve({ ok: true }),
): Call & { calls: UpstreamCall[] } {
  const calls: UpstreamCall[] = [];
  const send = ((call: UpstreamCall) => {
    calls.push(call);
    return answer(call);
  }) as Call & { calls: UpstreamCall[] };
  send.calls = calls;
  return send;
}

export function upstreamCall(over: Partial<UpstreamCall> = {}): UpstreamCall {
  return { method: 'retrieve', params: { query: 'q' }, deadlineAt: performance.now() + 5_000, ...over };
}

export function breakerSettings(over: Partial<BreakerSettings> = {}): BreakerSettings {
  return {
    errorThresholdPercentage: 50,
    rollingWindowMs: 10_000,
    rollingBuckets: 10,
    volumeThreshold: 3,
    resetTimeoutMs: 1_000,
    maxResetTimeoutMs: 60_000,
    ...over,
  };
}

export const silent: Logger = {
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
  child: () => silent,
};
