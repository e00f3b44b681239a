/**
 * The limiter layer: at most `concurrency` calls in flight to one engine (p-limit), at most
 * `maxQueue` more waiting for a slot. A call that finds the queue full is shed at once
 * (`queue-full`, reported through `onShed`), never sent. A call still waiting when its caller
 * aborts or its attempt's budget (`expiresAt`, deadline.ts) runs out is rejected at once, and
 * its slot, when it comes, is released unused: a queue behind a hanging engine never holds an
 * answer past its deadline.
 */
import pLimit, { type LimitFunction } from 'p-limit';
import type { Call, Layer, UpstreamCall } from '../upstream/call.js';
import type { JsonObject } from '../protocol/jsonrpc.js';
import { UpstreamError } from '../upstream/errors.js';

export class Limiter {
  private readonly limit: LimitFunction;

  constructor(
    concurrency: number,
    readonly maxQueue: number,
    private readonly onShed: () => void = () => undefined,
  ) {
    this.limit = pLimit(concurrency);
  }

  /** Calls holding a slot (sent, or about to be). */
  get active(): number {
    return this.limit.activeCount;
  }

  /** Calls waiting for a slot. */
  get waiting(): number {
    return this.limit.pendingCount;
  }

  readonly layer: Layer = (next) => (call) => this.admit(call, next);

  private admit(call: UpstreamCall, next: Call): Promise<JsonObject> {
    if (this.limit.activeCount >= this.limit.concurrency && this.limit.pendingCount >= this.maxQueue) {
      this.onShed();
      return Promise.reject(new UpstreamError('queue-full', `engine queue is full (${this.maxQueue} waiting)`));
    }
    if (call.signal?.aborted) return Promise.reject(new UpstreamError('aborted', 'aborted before it was sent'));
    // A free slot now: p-limit claims it at once and starts the call on the next microtask, so
    // there is no wait to bound: no timer, no abort listener (the transport honours both).
    if (this.limit.activeCount < this.limit.concurrency && this.limit.pendingCount === 0) return this.limit(() => next(call));
    return this.queued(call, next);
  }

  private queued(call: UpstreamCall, next: Call): Promise<JsonObject> {
    const { signal, expiresAt } = call;
    return new Promise<JsonObject>((resolve, reject) => {
      let state: 'waiting' | 'running' | 'gave-up' = 'waiting';
      const giveUp = (err: UpstreamError): void => {
        if (state !== 'waiting') return;
        state = 'gave-up';
        cleanup();
        reject(err);
      };
      const onAbort = (): void => giveUp(new UpstreamError('aborted', 'aborted while queued'));
      const timer = setTimeout(
        () => giveUp(new UpstreamError('timeout', "no free slot before the call's budget ran out (queued)")),
        Math.max(0, (expiresAt ?? call.deadlineAt) - performance.now()),
      );
      const cleanup = (): void => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      void this.limit(() => {
        if (state === 'gave-up') return Promise.resolve();
        state = 'running';
        cleanup();
        return next(call).then(resolve, reject);
      });
    });
  }
}
