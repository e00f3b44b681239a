/**
 * The live engine set and its hot reload (README, Operations): unchanged engines are kept with
 * their connections, breaker and state; new or changed ones are started before the switch;
 * requests already running finish on the set they started with; engines leaving the set are
 * stopped once those requests are done. Listener-bound settings keep their running values.
 * Reloads run one at a time; one rejects (leaving the old set in force) only when a `required`
 * new engine cannot start. Generic over the engine, so it knows nothing of transports.
 */
import type { EngineConfig, GatewayConfig, GatewaySettings } from '../config/schema.js';
import { Generations } from './generations.js';
import { carryRestartOnly, planReload, type PlannedEngine, type ReloadSummary } from './reload-plan.js';

/** What the set needs from an engine. */
export interface ManagedEngine extends PlannedEngine {
  readonly required: boolean;
  readonly lastError: string | undefined;
  /** Resolves false when the engine could not start (it keeps retrying in the background). */
  start(): Promise<boolean>;
  stop(): Promise<void>;
  /** Take new routing policy (weight, priority, …) without touching the connection. */
  retune(config: EngineConfig): void;
}

export type EngineFactory<E> = (config: EngineConfig, settings: GatewaySettings) => E;

export type ReloadOutcome = ReloadSummary & { ignoredSettings: string[] };

export class EngineSet<E extends ManagedEngine> {
  private list: E[];
  private current: GatewayConfig;
  private swaps = 0;
  /** Which requests still run on an earlier set; engines waiting to be stopped. */
  private readonly generations = new Generations();
  private readonly retiring = new Set<E>();
  private reloadChain: Promise<unknown> = Promise.resolve();

  constructor(
    config: GatewayConfig,
    private readonly create: EngineFactory<E>,
  ) {
    this.current = config;
    this.list = config.engines.map((engine) => create(engine, config.gateway));
  }

  get engines(): readonly E[] {
    return this.list;
  }

  get config(): GatewayConfig {
    return this.current;
  }

  /** Counts swaps: anything derived from the engine set is stale once this changes. */
  get revision(): number {
    return this.swaps;
  }

  /** Start every engine concurrently. Throws only when a `required` engine cannot start. */
  async start(): Promise<void> {
    const failed = await startRequired(this.list);
    if (failed.length > 0) throw requiredFailed(failed);
  }

  async stop(): Promise<void> {
    await Promise.all([...this.list, ...this.retiring].map((engine) => engine.stop()));
  }

  /**
   * Run one request on the set current now: it keeps the engines and config it started with even
   * if a reload swaps them meanwhile, and engines leaving the set are not stopped before it ends.
   */
  run<T>(work: (engines: readonly E[], config: GatewayConfig) => Promise<T>): Promise<T> {
    const lease = this.generations.enter();
    const leave = (): void => this.generations.leave(lease);
    let answer: Promise<T>;
    try {
      answer = work(this.list, this.current);
    } catch (err) {
      leave();
      return Promise.reject(err);
    }
    // Left before the caller hears the answer (this reaction is registered first), with one
    // reaction instead of an async function's promise and its await (every request runs here).
    answer.then(leave, leave);
    return answer;
  }

  reload(next: GatewayConfig): Promise<ReloadOutcome> {
    const run = this.reloadChain.then(() => this.apply(next));
    this.reloadChain = run.catch(() => undefined);
    return run;
  }

  private async apply(next: GatewayConfig): Promise<ReloadOutcome> {
    const { settings, ignored } = carryRestartOnly(this.current.gateway, next.gateway);
    const config: GatewayConfig = { ...next, gateway: settings };
    const plan = planReload(this.list, this.current.gateway, config);
    const created = new Map<string, E>();
    for (const slot of plan.slots) if ('create' in slot) created.set(slot.create.id, this.create(slot.create, settings));
    const failed = await startRequired([...created.values()]);
    if (failed.length > 0) {
      await Promise.all([...created.values()].map((engine) => engine.stop()));
      throw requiredFailed(failed);
    }
    // The switch itself is synchronous: a request sees either the old set or the new one.
    for (const slot of plan.slots) if ('keep' in slot) slot.keep.retune(slot.config);
    this.list = plan.slots.map((slot) => ('keep' in slot ? slot.keep : created.get(slot.create.id)!));
    this.current = config;
    this.swaps++;
    for (const engine of plan.retire) this.retiring.add(engine);
    void this.generations.advance().then(() =>
      Promise.all(
        plan.retire.map(async (engine) => {
          await engine.stop();
          this.retiring.delete(engine);
        }),
      ),
    );
    return { ...plan.summary, ignoredSettings: ignored };
  }
}

/** Start engines concurrently; the `required` ones that could not start. */
async function startRequired<E extends ManagedEngine>(engines: readonly E[]): Promise<E[]> {
  const results = await Promise.all(engines.map(async (engine) => ({ engine, ok: await engine.start() })));
  return results.filter((r) => !r.ok && r.engine.required).map((r) => r.engine);
}

function requiredFailed(engines: readonly ManagedEngine[]): Error {
  return new Error(`required engine(s) failed to start: ${engines.map((e) => `${e.id} (${e.lastError ?? 'unknown error'})`).join(', ')}`);
}
