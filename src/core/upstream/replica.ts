/**
 * One replica of an engine (one URL serving the same index as its siblings): its transport, the
 * load it carries now (calls in flight), how fast it has been (EWMA), and a small breaker of its
 * own. The breaker ejects the replica after `ejectAfter` engine faults in a row (or at once when
 * it failed `initialize`); after a cooldown it is offered one trial call: a success brings it
 * back, a failure ejects it again for twice as long (capped). The engine's own breaker only sees
 * what the replica set as a whole answers, so one replica going away never opens it.
 */
import { Ewma } from '../resilience/latency.js';
import { ErrorCode } from '../protocol/errors.js';
import { UpstreamError } from './errors.js';
import type { UpstreamTransport } from './transport.js';

export type ReplicaState = 'up' | 'ejected' | 'trial';

export interface ReplicaSettings {
  /** Engine faults in a row that eject a replica. */
  ejectAfter: number;
  /** First ejection cooldown; doubled per ejection in a row, up to `maxCooldownMs`. */
  cooldownMs: number;
  maxCooldownMs: number;
}

export const DEFAULT_REPLICA_SETTINGS: ReplicaSettings = { ejectAfter: 3, cooldownMs: 1_000, maxCooldownMs: 30_000 };

/**
 * How fast a replica's latency estimate fades while it gets no calls: by e⁻¹ every 10 s, toward
 * zero, as the peak-EWMA balancers of Finagle and Linkerd (tower's `PeakEwma`, decay 10 s) do.
 * Without it a replica measured slow once (a cold first call) loses every draw at low concurrency
 * and is never measured again; with it, an idle replica is tried again within seconds and its
 * estimate replaced by what it does now.
 */
const ESTIMATE_DECAY_MS = 10_000;

/** What catalog/list `_meta` and the metrics show of a replica (never its URL). */
export interface ReplicaSnapshot {
  replica: number;
  state: ReplicaState;
  inFlight: number;
  /** EWMA of its call latency in ms, rounded; absent before its first call. */
  ewmaMs?: number;
  /** Calls sent to it, initialize included (first attempts, hedges and failovers). */
  calls: number;
  ejections: number;
  /** Milliseconds until its trial, when ejected. */
  retryInMs?: number;
}

export class Replica {
  /**
   * It answered `initialize` (§7.1) and has not said since that it forgot (-32001, a restarted
   * stateful engine): only then may it take reads. One that missed it is initialized again when
   * its trial comes (replicas.ts), never sent a read it would refuse.
   */
  initialized = false;
  inFlight = 0;
  calls = 0;
  ejections = 0;
  private readonly latency = new Ewma();
  private lastSampleAt = 0;
  private faultsInRow = 0;
  private ejectionsInRow = 0;
  private ejectedUntil: number | undefined;
  private trialRunning = false;

  constructor(
    readonly index: number,
    readonly transport: UpstreamTransport,
    private readonly settings: ReplicaSettings,
    private readonly now: () => number,
  ) {}

  get state(): ReplicaState {
    if (this.ejectedUntil === undefined) return 'up';
    return this.now() >= this.ejectedUntil ? 'trial' : 'ejected';
  }

  /** May take a call now: up, or due for its trial and none running. */
  get available(): boolean {
    const state = this.state;
    return state === 'up' || (state === 'trial' && !this.trialRunning);
  }

  /** Power-of-two-choices cost at `now`: load times speed (`estimate`); an unmeasured replica costs `unmeasured`. */
  cost(unmeasured: number, now: number): number {
    return (this.inFlight + 1) * (this.estimate(now) ?? unmeasured);
  }

  /**
   * The latency estimate at `now`, faded by the time since its last sample (ESTIMATE_DECAY_MS);
   * undefined before one. One `now` for every replica compared, or the later-read one looks cheaper.
   */
  estimate(now: number): number | undefined {
    const ewma = this.latency.value;
    if (ewma === undefined) return undefined;
    const idleMs = now - this.lastSampleAt;
    return idleMs > 0 ? ewma * Math.exp(-idleMs / ESTIMATE_DECAY_MS) : ewma;
  }

  get ewmaMs(): number | undefined {
    return this.latency.value;
  }

  /** Milliseconds until the trial of an ejected replica (0 when due), undefined when up. */
  get retryInMs(): number | undefined {
    return this.ejectedUntil === undefined ? undefined : Math.max(0, this.ejectedUntil - this.now());
  }

  /** A call goes to this replica; returns when it started. */
  begin(): number {
    if (this.state === 'trial') this.trialRunning = true;
    this.inFlight += 1;
    this.calls += 1;
    return this.now();
  }

  /**
   * The call answered (an engine's error answer is an answer: the replica is alive). `timed`
   * false leaves the latency average alone (initialize: a cold start says nothing of reads).
   */
  answered(startedAt: number, timed = true): void {
    this.end(timed ? startedAt : undefined);
    this.recovered();
  }

  private recovered(): void {
    this.faultsInRow = 0;
    this.ejectionsInRow = 0;
    this.ejectedUntil = undefined;
  }

  /**
   * The call failed. Engine faults count towards ejection; the caller's abort does not. Its time
   * is a lower bound (a timeout says the replica is at least that slow; a refused connection,
   * failing at once, says nothing of how fast it answers).
   */
  failed(startedAt: number, err: unknown): void {
    this.end(startedAt, 'failure');
    if (err instanceof UpstreamError && err.remote?.code === ErrorCode.NotInitialized) {
      // §13: it refuses every request until initialized again: out of rotation until then.
      this.initialized = false;
      if (this.state !== 'ejected') this.eject();
      return;
    }
    if (err instanceof UpstreamError && !err.isEngineFault) {
      // An error answer is an answer (the caller's own error): a trial it ends is a success.
      if (err.reason === 'remote-error') this.recovered();
      return;
    }
    this.faultsInRow += 1;
    // A failed trial ejects again; a straggler failing while the replica is already out does not.
    const state = this.state;
    if (state === 'trial' || (state === 'up' && this.faultsInRow >= this.settings.ejectAfter)) this.eject();
  }

  /**
   * Its initialize failed, however (refused, or answered with an error such as -32002): out of
   * rotation for a cooldown that grows while it keeps failing, as any failed trial.
   */
  initializeFailed(startedAt: number): void {
    this.end(startedAt, 'failure');
    this.eject();
  }

  /** The call was abandoned by the gateway (a hedge answered first): its time is a lower bound. */
  abandoned(startedAt: number): void {
    this.end(startedAt, 'lower bound');
  }

  /** Out of rotation for the (growing) cooldown: failed initialize, or too many faults in a row. */
  eject(): void {
    const { cooldownMs, maxCooldownMs } = this.settings;
    const cooldown = Math.min(maxCooldownMs, cooldownMs * 2 ** Math.min(this.ejectionsInRow, 20));
    this.ejectionsInRow += 1;
    this.ejections += 1;
    this.faultsInRow = 0;
    this.ejectedUntil = this.now() + cooldown;
  }

  snapshot(): ReplicaSnapshot {
    const ewma = this.latency.value;
    const retryIn = this.retryInMs;
    return {
      replica: this.index,
      state: this.state,
      inFlight: this.inFlight,
      ...(ewma !== undefined ? { ewmaMs: Math.round(ewma * 10) / 10 } : {}),
      calls: this.calls,
      ejections: this.ejections,
      ...(retryIn !== undefined && retryIn > 0 ? { retryInMs: Math.round(retryIn) } : {}),
    };
  }

  /**
   * A lower bound (an abandoned call: it was still working) is recorded only when it raises the
   * estimate: as a plain sample, a replica that loses a hedge it was slow to answer would look
   * fast. A failure's time raises only an estimate the replica already has: a refused connection
   * fails at once and says nothing of how fast the replica answers.
   */
  private end(startedAt: number | undefined, sample: 'answer' | 'lower bound' | 'failure' = 'answer'): void {
    this.inFlight -= 1;
    this.trialRunning = false;
    if (startedAt === undefined) return;
    const now = this.now();
    const elapsed = now - startedAt;
    const estimate = this.latency.value;
    if (sample === 'failure' && (estimate === undefined || elapsed <= estimate)) return;
    if (sample === 'lower bound' && estimate !== undefined && elapsed <= estimate) return;
    this.latency.record(elapsed);
    this.lastSampleAt = now;
  }
}
