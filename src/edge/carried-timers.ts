/**
 * Timers that outlive the request which armed them, for workerd.
 *
 * workerd runs a timer only while the request that armed it is alive: once that request has
 * answered, its pending timers are dropped without a word. The gateway keeps state across
 * requests that timers move on — a breaker goes half-open after its reset timeout, its rolling
 * window turns over every bucket, an engine that is down is re-initialized after a backoff — and
 * without them a breaker opened by one request would stay open for the life of the isolate.
 *
 * So every timer is also kept in a table with its due time. A timer whose request is still
 * there fires as usual; one that is overdue by more than LATE_MS was dropped with its request,
 * and `catchUp()` — run at the start of every request — fires it then, inside that request (an
 * interval once per period it missed, up to MAX_MISSED_TICKS). The gateway's timed state only
 * matters to requests, so a transition made when the next request arrives is one made in time.
 */
export interface CarriedTimers {
  /** Fire what fell due while no live request could; call first thing in every request. */
  catchUp(): void;
  /** Timers in the table (for tests and diagnostics). */
  readonly size: number;
}

/** The timer functions of a global scope, as far as they are replaced here. */
export interface TimerScope {
  setTimeout: (callback: (...args: unknown[]) => void, ms?: number, ...args: unknown[]) => unknown;
  clearTimeout: (handle?: unknown) => void;
  setInterval: (callback: (...args: unknown[]) => void, ms?: number, ...args: unknown[]) => unknown;
  clearInterval: (handle?: unknown) => void;
}

/** A live request's timer fires within a few ms of its time; this late, its request is gone. */
export const LATE_MS = 250;
/** An interval missed for longer than this many periods fires this many times (a rolling window has fewer buckets). */
export const MAX_MISSED_TICKS = 1_000;

interface Entry {
  callback: (...args: unknown[]) => void;
  args: unknown[];
  dueAt: number;
  /** Set for intervals. */
  periodMs?: number;
  native: unknown;
}

/** What the replaced functions hand out: Node-style enough for code that calls `unref()`. */
class TimerHandle {
  constructor(readonly id: number) {}
  unref(): this {
    return this;
  }
  ref(): this {
    return this;
  }
  hasRef(): boolean {
    return true;
  }
  [Symbol.toPrimitive](): number {
    return this.id;
  }
}

export function installCarriedTimers(
  scope: TimerScope = globalThis as unknown as TimerScope,
  now: () => number = () => Date.now(),
): CarriedTimers {
  const native = {
    setTimeout: scope.setTimeout,
    clearTimeout: scope.clearTimeout,
    setInterval: scope.setInterval,
    clearInterval: scope.clearInterval,
  };
  const table = new Map<number, Entry>();
  let nextId = 1;

  const run = (entry: Entry): void => {
    try {
      entry.callback(...entry.args);
    } catch (err) {
      console.error(JSON.stringify({ level: 50, msg: 'timer callback failed', err: err instanceof Error ? err.message : String(err) }));
    }
  };
  const idOf = (handle: unknown): number | undefined =>
    handle instanceof TimerHandle ? handle.id : typeof handle === 'number' ? handle : undefined;
  const clear = (handle: unknown): void => {
    const id = idOf(handle);
    const entry = id === undefined ? undefined : table.get(id);
    if (id === undefined || !entry) return;
    table.delete(id);
    if (entry.periodMs === undefined) native.clearTimeout.call(scope, entry.native);
    else native.clearInterval.call(scope, entry.native);
  };

  scope.setTimeout = (callback, ms = 0, ...args) => {
    const id = nextId++;
    const entry: Entry = { callback, args, dueAt: now() + ms, native: undefined };
    table.set(id, entry);
    entry.native = native.setTimeout.call(
      scope,
      () => {
        if (table.get(id) !== entry) return; // already caught up, or cleared
        table.delete(id);
        run(entry);
      },
      ms,
    );
    return new TimerHandle(id);
  };
  scope.setInterval = (callback, ms = 0, ...args) => {
    const id = nextId++;
    const periodMs = Math.max(1, ms);
    const entry: Entry = { callback, args, dueAt: now() + periodMs, periodMs, native: undefined };
    table.set(id, entry);
    entry.native = native.setInterval.call(
      scope,
      () => {
        if (table.get(id) !== entry) return;
        entry.dueAt = now() + periodMs;
        run(entry);
      },
      periodMs,
    );
    return new TimerHandle(id);
  };
  scope.clearTimeout = clear;
  scope.clearInterval = clear;

  return {
    catchUp() {
      const at = now();
      for (const [id, entry] of [...table]) {
        if (at - entry.dueAt <= LATE_MS || table.get(id) !== entry) continue;
        if (entry.periodMs === undefined) {
          table.delete(id);
          run(entry);
          continue;
        }
        const periods = Math.floor((at - entry.dueAt) / entry.periodMs) + 1;
        entry.dueAt += periods * entry.periodMs; // the next tick after now, in the interval's phase
        const missed = Math.min(MAX_MISSED_TICKS, periods);
        for (let tick = 0; tick < missed && table.get(id) === entry; tick++) run(entry);
      }
    },
    get size() {
      return table.size;
    },
  };
}
