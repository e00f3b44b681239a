/**
 * One read over a replica set: a first attempt to the replica the pool picks, and at most one
 * more, to another replica, either
 *
 * - a failover, at once, when the first fails at the transport (connection refused or reset,
 *   a process gone: the request did not get an answer, and a read is safe to repeat, §13.1), or
 * - a hedge ("The Tail at Scale"), when the first has not answered after the hedge delay, the
 *   engine's concurrency cap has a free slot and the hedge budget a token: the first answer wins
 *   and the other attempt is aborted (over HTTP the request is cancelled, so the engine sees its
 *   client go away).
 *
 * A call that relays progress or log frames is never hedged: two engines' frames for one leg
 * would interleave. An engine's error answer is an answer: it is passed on, never failed over.
 */
import type { HedgeBudget } from '../resilience/hedge-budget.js';
import type { JsonObject } from '../protocol/jsonrpc.js';
import { ErrorCode } from '../protocol/errors.js';
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
  /** Hedges not sent because the engine's concurrency cap (`maxConcurrent`) had no free slot. */
  capped: number;
}

export interface ReplicaPool {
  readonly now: () => number;
  readonly budget: HedgeBudget | undefined;
  readonly hedges: HedgeCounts;
  pick(exclude?: ReadonlySet<Replica>): Replica | undefined;
  /** A slot of the engine's concurrency cap for a hedge, with its release; undefined when none is free. */
  hedgeSlot(): (() => void) | undefined;
  hedgeDelay(): number | undefined;
  recordLatency(ms: number): void;
}

type AttemptKind = 'first' | 'failover' | 'hedge';

interface Attempt {
  replica: Replica;
  kind: AttemptKind;
  controller: AbortController;
  running: boolean;
  /** A hedge's own slot of the engine's concurrency cap, freed when it settles. */
  release: (() => void) | undefined;
}

/** The transport failures after which the same read may go to another replica. */
function failsOver(err: unknown): boolean {
  if (!(err instanceof UpstreamError)) return false;
  // -32001: the replica forgot its initialize (restarted) and refused the read unread (§13).
  return err.reason === 'transport' || err.reason === 'crashed' || err.remote?.code === ErrorCode.NotInitialized;
}

export function hedgedRead(pool: ReplicaPool, method: string, params: JsonObject, options: UpstreamCallOptions): Promise<JsonObject> {
  const first = pool.pick();
  if (!first) return Promise.reject(new UpstreamError('not-ready', 'no replica in rotation'));
  return new Promise((resolve, reject) => new HedgedRead(pool, method, params, options, resolve, reject).start(first));
}

/** The attempts of one read and the one answer they give; settles exactly once. */
class HedgedRead {
  private readonly startedAt: number;
  private readonly deadline: number;
  private readonly attempts: Attempt[] = [];
  private settled = false;
  private hedgeTimer: ReturnType<typeof setTimeout> | undefined;
  private readonly onParentAbort = (): void => {
    for (const attempt of this.attempts) attempt.controller.abort(this.options.signal?.reason);
  };

  constructor(
    private readonly pool: ReplicaPool,
    private readonly method: string,
    private readonly params: JsonObject,
    private readonly options: UpstreamCallOptions,
    private readonly resolve: (result: JsonObject) => void,
    private readonly reject: (err: unknown) => void,
  ) {
    this.startedAt = pool.now();
    this.deadline = this.startedAt + options.timeoutMs;
  }

  start(first: Replica): void {
    this.options.signal?.addEventListener('abort', this.onParentAbort, { once: true });
    this.launch(first, 'first');
    this.pool.budget?.earn();
    // Frames of two replicas for one leg would interleave: a relaying call is never hedged.
    const delay = this.options.onProgress || this.options.onLog ? undefined : this.pool.hedgeDelay();
    if (delay === undefined) return;
    this.hedgeTimer = setTimeout(() => this.hedge(), delay);
    (this.hedgeTimer as { unref?: () => void }).unref?.();
  }

  private get parentAborted(): boolean {
    return this.options.signal?.aborted === true;
  }

  private launch(replica: Replica, kind: AttemptKind, release?: () => void): void {
    const attempt: Attempt = { replica, kind, controller: new AbortController(), running: true, release };
    this.attempts.push(attempt);
    if (this.parentAborted) attempt.controller.abort(this.options.signal?.reason);
    const begunAt = replica.begin();
    const timeoutMs = Math.max(1, Math.round(this.deadline - this.pool.now()));
    replica.transport.call(this.method, this.params, { ...this.options, signal: attempt.controller.signal, timeoutMs }).then(
      (result) => this.answered(attempt, begunAt, result),
      (err: unknown) => this.failed(attempt, begunAt, err),
    );
  }

  private answered(attempt: Attempt, begunAt: number, result: JsonObject): void {
    attempt.running = false;
    attempt.release?.();
    attempt.replica.answered(begunAt);
    if (this.settled) return;
    this.pool.recordLatency(this.pool.now() - this.startedAt);
    this.settle(attempt);
    this.resolve(result);
  }

  private failed(attempt: Attempt, begunAt: number, err: unknown): void {
    attempt.running = false;
    attempt.release?.();
    // Aborted because the other attempt answered: says nothing against this replica.
    if (this.settled && !this.parentAborted) return attempt.replica.abandoned(begunAt);
    attempt.replica.failed(begunAt, err);
    if (this.settled) return;
    if (failsOver(err) && this.attempts.length < 2 && !this.parentAborted) {
      const next = this.pool.pick(this.tried());
      if (next) return this.launch(next, 'failover');
    }
    if (this.attempts.some((a) => a.running)) return; // the other attempt may still answer
    this.settle(undefined);
    this.reject(err);
  }

  /** The hedge delay has passed with no answer: a second replica, if the budget allows. */
  private hedge(): void {
    if (this.settled || this.attempts.length >= 2 || this.parentAborted) return;
    const next = this.pool.pick(this.tried());
    if (!next) return;
    // The engine's cap counts the hedge too: at most `maxConcurrent` requests reach its replicas.
    // Checked before the budget, so a hedge the cap stops spends no token.
    const release = this.pool.hedgeSlot();
    if (!release) {
      this.pool.hedges.capped += 1;
      return;
    }
    if (!this.pool.budget!.tryTake()) {
      release();
      this.pool.hedges.denied += 1;
      return;
    }
    this.pool.hedges.sent += 1;
    this.launch(next, 'hedge', release);
  }

  private settle(winner: Attempt | undefined): void {
    this.settled = true;
    clearTimeout(this.hedgeTimer);
    this.options.signal?.removeEventListener('abort', this.onParentAbort);
    if (winner && this.attempts.some((attempt) => attempt.kind === 'hedge'))
      this.pool.hedges[winner.kind === 'hedge' ? 'won' : 'lost'] += 1;
    // The loser is cancelled: its engine stops work it no longer needs to do.
    for (const attempt of this.attempts) if (attempt.running) attempt.controller.abort(new Error('answered by another replica'));
  }

  private tried(): Set<Replica> {
    return new Set(this.attempts.map((attempt) => attempt.replica));
  }
}
