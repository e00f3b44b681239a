/**
 * The limiter layer: at most `concurrency` calls in flight to one engine, at most `maxQueue` more
 * waiting for a slot, first come first served. A call that finds the queue full is shed at once
 * (`queue-full`, reported through `onShed`), never sent. A call still waiting when its caller
 * aborts or its attempt's budget (`expiresAt`, deadline.ts) runs out is rejected at once and
 * leaves the queue: a queue behind a hanging engine never holds an answer past its deadline.
 *
 * A counter and a queue rather than p-limit: every leg of every request passes here, and with a
 * free slot (the usual case) this is one increment and one reaction on the answer, where p-limit
 * queued a closure, started the call on a later microtask and added three promises per call
 * (bench/RESULTS.md, 2026-12-02).
 */
import type { Call, Layer, UpstreamCall } from '../upstream/call.js';
import type { JsonObject } from '../protocol/jsonrpc.js';
import { UpstreamError } from '../upstream/errors.js';

export class Limiter {
  /** Calls holding a slot. */
  private running = 0;
  /** Starters of the calls waiting for a slot, oldest first; a call that gives up leaves it at once. */
  private readonly queue: Array<() => void> = [];

  constructor(
    readonly concurrency: number,
    readonly maxQueue: number,
    private readonly onShed: () => void = () => undefined,
  ) {}

  /** Calls holding a slot (sent, or about to be). */
  get active(): number {
    return this.running;
  }

  /** Calls waiting for a slot. */
  get waiting(): number {
    return this.queue.length;
  }

  readonly layer: Layer = (next) => (call) => this.admit(call, next);

  /**
   * A slot for work that rides on a call already holding one (a hedged read's second request,
   * upstream/hedged-read.ts), taken only when one is free and nobody waits: the engine never sees
   * more than `concurrency` requests, and a queued call is never passed by a hedge. Returns the
   * slot's release (idempotent), or undefined when there is none to spare.
   */
  trySpare(): (() => void) | undefined {
    if (this.running >= this.concurrency || this.queue.length > 0) return undefined;
    this.running += 1;
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      this.release();
    };
  }

  private admit(call: UpstreamCall, next: Call): Promise<JsonObject> {
    if (this.running >= this.concurrency && this.queue.length >= this.maxQueue) {
      this.onShed();
      return Promise.reject(new UpstreamError('queue-full', `engine queue is full (${this.maxQueue} waiting)`));
    }
    if (call.signal?.aborted) return Promise.reject(new UpstreamError('aborted', 'aborted before it was sent'));
    // A free slot now, and nobody ahead: the call takes it and is sent at once. There is no wait
    // to bound: no timer, no abort listener (the transport honours both), no extra promise.
    if (this.running < this.concurrency && this.queue.length === 0) return this.run(call, next);
    return this.queued(call, next);
  }

  /** Send `call` holding a slot, freed (and handed to the oldest waiting call) when it settles. */
  private run(call: UpstreamCall, next: Call): Promise<JsonObject> {
    this.running += 1;
    let answer: Promise<JsonObject>;
    try {
      answer = next(call);
    } catch (err) {
      // A layer that throws instead of rejecting must not keep the slot.
      answer = Promise.reject(err);
    }
    answer.then(this.release, this.release);
    return answer;
  }

  private readonly release = (): void => {
    this.running -= 1;
    this.queue.shift()?.();
  };

  private queued(call: UpstreamCall, next: Call): Promise<JsonObject> {
    const { signal, expiresAt } = call;
    return new Promise<JsonObject>((resolve, reject) => {
      const start = (): void => {
        cleanup();
        this.run(call, next).then(resolve, reject);
      };
      const giveUp = (err: UpstreamError): void => {
        const at = this.queue.indexOf(start);
        if (at < 0) return; // already started
        this.queue.splice(at, 1);
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
      this.queue.push(start);
    });
  }
}
