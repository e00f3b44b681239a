/**
 * One read over a replica set: a first attempt to the replica the pool picks, and at most one
 * more, to another replica, either
 *
 * - a failover, at once, when the first fails at the transport (connection refused or reset,
 *   a process gone: the request did not get an answer, and a read is safe to repeat, §13.1), or
 * - a hedge ("The Tail at Scale"), when the first has not answered after the hedge delay and the
 *   hedge budget has a token: the first answer wins and the other attempt is aborted (over HTTP
 *   the request is cancelled, so the engine sees its client go away).
 *
 * A call that relays progress or log frames is never hedged: two engines' frames for one leg
 * would interleave. An engine's error answer is an answer: it is passed on, never failed over.
 */
import type { HedgeBudget } from '../resilience/hedge-budget.js';
import type { JsonObject } from '../protocol/jsonrpc.js';
import { UpstreamError } from './errors.js';
import type { Replica } from './replica.js';
import type { UpstreamCallOptions } from './transport.js';

export interface HedgeCounts {
  /** Hedges sent. */
  sent: number;
  /** Hedges that answered first. */
  won: number;
  /** Hedges the first attempt beat. */
  lost: number;
  /** Hedges the budget refused. */
  denied: number;
}

export interface ReplicaPool {
  readonly now: () => number;
  readonly budget: HedgeBudget | undefined;
  readonly hedges: HedgeCounts;
  pick(exclude?: ReadonlySet<Replica>): Replica | undefined;
  hedgeDelay(): number | undefined;
  recordLatency(ms: number): void;
}

type AttemptKind = 'first' | 'failover' | 'hedge';

interface Attempt {
  replica: Replica;
  kind: AttemptKind;
  controller: AbortController;
  running: boolean;
}

/** The transport failures after which the same read may go to another replica. */
function failsOver(err: unknown): boolean {
  return err instanceof UpstreamError && (err.reason === 'transport' || err.reason === 'crashed');
}

export function hedgedRead(pool: ReplicaPool, method: string, params: JsonObject, options: UpstreamCallOptions): Promise<JsonObject> {
  const first = pool.pick();
  if (!first) return Promise.reject(new UpstreamError('not-ready', 'no replica in rotation'));
  return new Promise((resolve, reject) => {
    const startedAt = pool.now();
    const deadline = startedAt + options.timeoutMs;
    const attempts: Attempt[] = [];
    let settled = false;
    // Set once the first attempt is out (below); attempts settle asynchronously, never before.
    const timer: { hedge?: ReturnType<typeof setTimeout> } = {};
    const parent = options.signal;
    const onParentAbort = (): void => {
      for (const attempt of attempts) attempt.controller.abort(parent?.reason);
    };
    parent?.addEventListener('abort', onParentAbort, { once: true });

    const settle = (winner: Attempt | undefined): void => {
      settled = true;
      clearTimeout(timer.hedge);
      parent?.removeEventListener('abort', onParentAbort);
      const hedged = attempts.some((attempt) => attempt.kind === 'hedge');
      if (winner && hedged) pool.hedges[winner.kind === 'hedge' ? 'won' : 'lost'] += 1;
      // The loser is cancelled: its engine stops work it no longer needs to do.
      for (const attempt of attempts) if (attempt.running) attempt.controller.abort(new Error('answered by another replica'));
    };

    const launch = (replica: Replica, kind: AttemptKind): void => {
      const attempt: Attempt = { replica, kind, controller: new AbortController(), running: true };
      attempts.push(attempt);
      if (parent?.aborted) attempt.controller.abort(parent.reason);
      const begunAt = replica.begin();
      const callOptions = { ...options, signal: attempt.controller.signal, timeoutMs: Math.max(1, Math.round(deadline - pool.now())) };
      replica.transport.call(method, params, callOptions).then(
        (result) => {
          attempt.running = false;
          replica.answered(begunAt);
          if (settled) return;
          pool.recordLatency(pool.now() - startedAt);
          settle(attempt);
          resolve(result);
        },
        (err: unknown) => {
          attempt.running = false;
          if (settled && !parent?.aborted) return replica.abandoned(begunAt);
          replica.failed(begunAt, err);
          if (settled) return;
          if (failsOver(err) && attempts.length < 2 && !parent?.aborted) {
            const next = pool.pick(new Set(attempts.map((a) => a.replica)));
            if (next) return launch(next, 'failover');
          }
          if (attempts.some((a) => a.running)) return; // the other attempt may still answer
          settle(undefined);
          reject(err);
        },
      );
    };

    launch(first, 'first');
    pool.budget?.earn();
    const delay = options.onProgress || options.onLog ? undefined : pool.hedgeDelay();
    if (delay === undefined) return;
    timer.hedge = setTimeout(() => {
      if (settled || attempts.length >= 2 || parent?.aborted) return;
      const next = pool.pick(new Set(attempts.map((a) => a.replica)));
      if (!next) return;
      if (!pool.budget!.tryTake()) {
        pool.hedges.denied += 1;
        return;
      }
      pool.hedges.sent += 1;
      launch(next, 'hedge');
    }, delay);
    (timer.hedge as { unref?: () => void }).unref?.();
  });
}
