/**
 * A request's cancellation: aborted at most once, with a reason (cancel, disconnect, deadline,
 * shutdown), heard at once by every leg still out.
 *
 * Why not an AbortController: on Node 20 creating one (its AbortSignal is an EventTarget) and
 * hooking a listener per leg cost ~10 µs per request, 14 % of the gateway's own CPU per request
 * (bench/core-cost.js; docs/performance.md, "CPU diet"), for a signal that almost never fires.
 * `AbortLike` is the part of AbortSignal the gateway uses, so a real AbortSignal is one too (the
 * console's, tests'); code that must hand a signal to a platform API (fetch) makes its own
 * controller per call and listens here (upstream/call-signal.ts).
 */

/** What the gateway reads off a request's abort signal; an AbortSignal satisfies it. */
export interface AbortLike {
  readonly aborted: boolean;
  readonly reason: unknown;
  addEventListener(type: 'abort', listener: () => void, options?: { once?: boolean }): void;
  removeEventListener(type: 'abort', listener: () => void): void;
  /** Throws `reason` once aborted. */
  throwIfAborted(): void;
}

/**
 * The source and its signal in one object (`signal` is the object itself, typed read-only). As
 * with AbortSignal: listeners run synchronously in the order added, once; one added after the
 * abort never runs (callers check `aborted` first); adding the same listener twice adds it once;
 * a listener that throws does not stop the others (its error is rethrown from a microtask, as an
 * EventTarget reports it).
 */
export class Cancellation implements AbortLike {
  private abortedWith: { reason: unknown } | undefined;
  private listeners: Array<() => void> | undefined;

  get signal(): AbortLike {
    return this;
  }

  get aborted(): boolean {
    return this.abortedWith !== undefined;
  }

  get reason(): unknown {
    return this.abortedWith?.reason;
  }

  abort(reason: unknown): void {
    if (this.abortedWith) return;
    this.abortedWith = { reason };
    const listeners = this.listeners;
    this.listeners = undefined;
    if (!listeners) return;
    for (const listener of listeners) {
      try {
        listener();
      } catch (err) {
        queueMicrotask(() => {
          throw err;
        });
      }
    }
  }

  addEventListener(_type: 'abort', listener: () => void): void {
    if (this.abortedWith) return;
    const listeners = (this.listeners ??= []);
    if (!listeners.includes(listener)) listeners.push(listener);
  }

  removeEventListener(_type: 'abort', listener: () => void): void {
    const listeners = this.listeners;
    if (!listeners) return;
    const at = listeners.indexOf(listener);
    if (at >= 0) listeners.splice(at, 1);
  }

  throwIfAborted(): void {
    if (this.abortedWith) throw this.abortedWith.reason;
  }
}
