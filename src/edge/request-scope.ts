/**
 * The request a piece of work runs for, on workerd. workerd ends every fetch a request started
 * once that request has answered, unless the request was told to wait for it (`waitUntil`). Work
 * the gateway starts between requests — an engine re-initialized by a timer that `catchUp()`
 * fires at the start of a request — must not be cut off when that request answers first: the
 * fetch transport hands every exchange to `keepAlive`, which ties it to the request it runs in.
 * (AsyncLocalStorage comes with workerd's `nodejs_compat` flag.)
 */
import { AsyncLocalStorage } from 'node:async_hooks';

export interface RequestLifetime {
  waitUntil(work: Promise<unknown>): void;
}

const current = new AsyncLocalStorage<RequestLifetime>();

/** Run `handle` as the request `lifetime` belongs to. */
export function inRequest<T>(lifetime: RequestLifetime, handle: () => T): T {
  return current.run(lifetime, handle);
}

/** Keep the current request alive until `settled` resolves (no-op outside a request). */
export function keepAlive(settled: Promise<unknown>): void {
  current.getStore()?.waitUntil(settled);
}
