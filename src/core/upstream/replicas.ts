/**
 * One logical engine served by several replicas (an `http` engine with `urls`): one transport to
 * the rest of the gateway — one id, one breaker, one limiter, one catalog entry, one place in
 * fusion and dedup — over one child transport per replica, built by the runtime's own factory.
 *
 * - `initialize` goes to every replica (each is its own server, §7.1); the first success is the
 *   engine's answer, and a replica that fails it starts ejected (replica.ts).
 * - Reads (§12.2, §13.1: safe to repeat) are balanced by power-of-two-choices on (in-flight + 1)
 *   × EWMA latency among the replicas in rotation, fail over once to another replica when the
 *   chosen one fails at the transport (connection refused or reset, a dying process), and may be
 *   hedged (hedged-read.ts).
 * - `ping` and `info` go to one balanced replica, once.
 * - Everything else — writes (§7.10, §7.11: may have taken effect), `feedback`, `memory/*` (a
 *   memory handle belongs to the replica that built it), `shutdown`, vendor methods — goes to the
 *   first replica in rotation in config order, once: never balanced, hedged or failed over.
 *
 * Runtime-neutral: the child transports come from the composition root.
 */
import type { JsonObject } from '../protocol/jsonrpc.js';
import { READ_METHODS } from '../protocol/methods.js';
import { HedgeBudget } from '../resilience/hedge-budget.js';
import { LatencyWindow } from '../resilience/latency.js';
import { hedgedRead, type HedgeCounts, type ReplicaPool } from './hedged-read.js';
import { DEFAULT_REPLICA_SETTINGS, Replica, type ReplicaSettings, type ReplicaSnapshot } from './replica.js';
import type { TransportLimits, UpstreamCallOptions, UpstreamTransport } from './transport.js';

export interface HedgeSettings {
  /** Hedge a read not answered after this many ms; absent = the engine's observed p95. */
  delayMs?: number;
  /** Hedges allowed per read (token bucket, hedge-budget.ts). */
  budget: number;
}

export interface ReplicaTransportOptions {
  /** Absent: reads are balanced and failed over, never hedged. */
  hedge?: HedgeSettings;
  /**
   * A free slot of the engine's concurrency cap for a hedge, with its release; undefined when none
   * is free, and the read is not hedged (counted `capped`). Absent: hedges are not capped.
   */
  spareSlot?: () => (() => void) | undefined;
  replica?: Partial<ReplicaSettings>;
  /** Clock and coin, injectable for tests. */
  now?: () => number;
  random?: () => number;
}

/** Reads whose answer does not depend on which replica gives it. */
const BALANCED = new Set([...READ_METHODS].filter((method) => method !== 'memory/recall'));

export interface ReplicaSetSnapshot {
  replicas: ReplicaSnapshot[];
  hedges: HedgeCounts & { delayMs?: number };
}

export class ReplicaTransport implements UpstreamTransport, ReplicaPool {
  readonly kind: 'http' | 'stdio';
  readonly replicas: readonly Replica[];
  readonly budget: HedgeBudget | undefined;
  readonly hedges: HedgeCounts = { sent: 0, won: 0, lost: 0, denied: 0, capped: 0 };
  readonly now: () => number;
  private readonly random: () => number;
  private readonly latency = new LatencyWindow();
  /** The engine's initialize, kept for replicas that join late (reinitialize). */
  private initialize: { params: JsonObject; options: UpstreamCallOptions } | undefined;

  constructor(
    children: readonly UpstreamTransport[],
    private readonly options: ReplicaTransportOptions = {},
  ) {
    if (children.length === 0) throw new Error('a replica set needs at least one transport');
    this.kind = children[0]!.kind;
    this.now = options.now ?? (() => performance.now());
    this.random = options.random ?? Math.random;
    const settings = { ...DEFAULT_REPLICA_SETTINGS, ...options.replica };
    this.replicas = children.map((child, index) => new Replica(index, child, settings, this.now));
    this.budget = options.hedge ? new HedgeBudget(options.hedge.budget) : undefined;
  }

  call(method: string, params: JsonObject, options: UpstreamCallOptions): Promise<JsonObject> {
    if (method === 'initialize') return this.initializeAll(params, options);
    // A liveness probe goes to one balanced replica as it is: no hedge, and no say in the p95.
    if (method === 'ping' || method === 'info') return this.once(this.pick()!, method, params, options);
    if (BALANCED.has(method)) return hedgedRead(this, method, params, options);
    const first = this.replicas.find((candidate) => candidate.available && candidate.initialized) ?? this.soonestTrial()!;
    return this.once(first, method, params, options);
  }

  /** Cancels are per request id and a replica ignores ids it does not know (§7.14): tell every one. */
  notify(method: string, params: JsonObject): void {
    for (const replica of this.replicas) replica.transport.notify(method, params);
  }

  async close(): Promise<void> {
    await Promise.all(this.replicas.map((replica) => replica.transport.close()));
  }

  /**
   * Power of two choices: two distinct replicas at random among those in rotation, the cheaper
   * one wins. A replica due for its trial is taken first (one trial at a time), so a recovered
   * replica comes back at once. With none in rotation, the one whose trial comes soonest.
   */
  pick(exclude?: ReadonlySet<Replica>): Replica | undefined {
    const open: Replica[] = [];
    for (const replica of this.replicas) {
      if (exclude?.has(replica) || !replica.available) continue;
      if (!replica.initialized) {
        this.reinitialize(replica); // its trial is an initialize; reads go elsewhere meanwhile
        continue;
      }
      if (replica.state === 'trial') return replica;
      open.push(replica);
    }
    if (open.length === 0) return exclude === undefined ? this.soonestTrial() : undefined;
    if (open.length === 1) return open[0];
    const first = Math.floor(this.random() * open.length);
    const second = (first + 1 + Math.floor(this.random() * (open.length - 1))) % open.length;
    const now = this.now();
    const a = open[first]!;
    const b = open[second]!;
    // The mean of the others is for a drawn replica not measured yet: computed only then.
    const unmeasured = a.ewmaMs === undefined || b.ewmaMs === undefined ? this.typicalLatency(now) : 0;
    return a.cost(unmeasured, now) <= b.cost(unmeasured, now) ? a : b;
  }

  /** A slot of the engine's concurrency cap for a hedge: its release, or undefined when none is free. */
  hedgeSlot(): (() => void) | undefined {
    return this.options.spareSlot ? this.options.spareSlot() : UNCAPPED;
  }

  /** When a read not yet answered is hedged: the configured delay, else the observed p95. */
  hedgeDelay(): number | undefined {
    if (!this.options.hedge) return undefined;
    return this.options.hedge.delayMs ?? this.latency.quantile;
  }

  /** A read's latency as its caller saw it (the first answer): what the p95 is made of. */
  recordLatency(ms: number): void {
    this.latency.record(ms);
  }

  snapshot(): ReplicaSetSnapshot {
    const delay = this.hedgeDelay();
    return {
      replicas: this.replicas.map((replica) => replica.snapshot()),
      hedges: { ...this.hedges, ...(delay !== undefined ? { delayMs: Math.round(delay * 10) / 10 } : {}) },
    };
  }

  /** Every replica is asked; the first success answers, the rest finish in the background. */
  private initializeAll(params: JsonObject, options: UpstreamCallOptions): Promise<JsonObject> {
    // What a replica that missed it (down at start, restarted) is sent again at its trial.
    this.initialize = { params, options: { timeoutMs: options.timeoutMs, maxResponseBytes: options.maxResponseBytes } };
    return new Promise((resolve, reject) => {
      let failures = 0;
      for (const replica of this.replicas) {
        this.initializeOne(replica, params, options).then(resolve, (err: unknown) => {
          failures += 1;
          if (failures === this.replicas.length) reject(err instanceof Error ? err : new Error(String(err)));
        });
      }
    });
  }

  /** A replica's initialize: a success brings it into rotation, a failure takes it out for its cooldown. */
  private initializeOne(replica: Replica, params: JsonObject, options: UpstreamCallOptions): Promise<JsonObject> {
    const startedAt = replica.begin();
    return replica.transport.call('initialize', params, options).then(
      (result) => {
        replica.initialized = true;
        replica.answered(startedAt, false);
        return result;
      },
      (err: unknown) => {
        replica.initializeFailed(startedAt);
        throw err;
      },
    );
  }

  /** A replica due for its trial that is not initialized is sent initialize (in the background), once at a time. */
  private reinitialize(replica: Replica): void {
    if (!this.initialize || replica.state !== 'trial') return;
    this.initializeOne(replica, this.initialize.params, this.initialize.options).catch(() => undefined); // its state says how it went
  }

  /** One call to one replica, never repeated (writes go to the first replica in rotation). */
  private async once(replica: Replica, method: string, params: JsonObject, options: UpstreamCallOptions): Promise<JsonObject> {
    const startedAt = replica.begin();
    try {
      const result = await replica.transport.call(method, params, options);
      replica.answered(startedAt);
      return result;
    } catch (err) {
      replica.failed(startedAt, err);
      throw err;
    }
  }

  private soonestTrial(): Replica | undefined {
    let best: Replica | undefined;
    for (const replica of this.replicas) {
      if ((replica.retryInMs ?? 0) < (best?.retryInMs ?? Infinity)) best = replica;
    }
    return best;
  }

  /** What an unmeasured replica is assumed to cost: the mean estimate of the measured ones in rotation. */
  private typicalLatency(now: number): number {
    let sum = 0;
    let count = 0;
    for (const replica of this.replicas) {
      const ewma = replica.state === 'ejected' ? undefined : replica.estimate(now);
      if (ewma !== undefined) {
        sum += ewma;
        count += 1;
      }
    }
    return count === 0 ? 1 : sum / count;
  }
}

/** A hedge's release where no concurrency cap is wired (a replica set built on its own, in tests). */
const UNCAPPED = (): void => undefined;

/** A replica set's options: its engine entry's hedging, and the engine's concurrency cap for hedges. */
export function replicaOptions(engine: { hedge?: HedgeSettings | undefined }, limits: TransportLimits): ReplicaTransportOptions {
  return { ...(engine.hedge ? { hedge: engine.hedge } : {}), ...(limits.spareSlot ? { spareSlot: limits.spareSlot } : {}) };
}

/** The replica set behind a transport, when it is one (catalog/list `_meta`, metrics). */
export function replicaSetOf(transport: UpstreamTransport): ReplicaSetSnapshot | undefined {
  return transport instanceof ReplicaTransport ? transport.snapshot() : undefined;
}
