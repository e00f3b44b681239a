/**
 * Composition root: config → engines → the RCP service the transports serve.
 * The service is the gateway as an RCP server (§7.13 aggregator): it answers `retrieve` by
 * federation, `catalog/list` from its engines, and routes every other method to one engine.
 */
import type { GatewayConfig } from '../config/schema.js';
import type { InitializeResult } from '../protocol/capabilities.js';
import { PROTOCOL_VERSION } from '../protocol/capabilities.js';
import type { JsonObject } from '../protocol/jsonrpc.js';
import type { Logger } from '../../node/observability/log.js';
import type { CallContext, RcpService } from '../service/contract.js';
import { Engine, type EngineHooks } from '../upstream/engine.js';
import type { TransportFactory } from '../upstream/transport.js';
import { RetryBudget } from '../resilience/retry.js';
import { deriveCapabilities } from '../federation/capabilities.js';
import type { FederationContext, FederationHooks } from '../federation/context.js';
import { federatedRetrieve } from '../federation/retrieve.js';
import { routeToOne } from '../federation/routing.js';
import { federatedGraph } from '../federation/graph.js';
import { federatedWrite } from '../federation/writes.js';
import { Generations } from '../ops/generations.js';
import { carryRestartOnly, planReload, type ReloadSummary } from '../ops/reload-plan.js';

export const GATEWAY_VERSION = '0.1.0';

export interface GatewayOptions {
  logger: Logger;
  hooks?: FederationHooks & EngineHooks;
  /** How long `start()` waits for engines to initialize before serving anyway. */
  startupWaitMs?: number;
  /** Builds each engine's transport; absent = HTTP or stdio by the engine's config. */
  transports?: TransportFactory;
}

export class Gateway implements RcpService {
  private engineList: Engine[];
  private capabilitySet: InitializeResult | undefined;
  /** Hot reload: which requests still run on an earlier engine set; engines waiting to be stopped. */
  private readonly generations = new Generations();
  private readonly retiring = new Set<Engine>();
  private reloadChain: Promise<unknown> = Promise.resolve();

  constructor(
    private config: GatewayConfig,
    private readonly options: GatewayOptions,
  ) {
    this.engineList = config.engines.map((engineConfig) => this.createEngine(engineConfig));
  }

  get engines(): readonly Engine[] {
    return this.engineList;
  }

  get settings(): GatewayConfig['gateway'] {
    return this.config.gateway;
  }

  get defaultDeadlineMs(): number {
    return this.config.gateway.deadlineMs;
  }

  /** Start every engine concurrently. Throws only when a `required` engine cannot start. */
  async start(): Promise<void> {
    const results = await Promise.all(this.engineList.map(async (engine) => ({ engine, ok: await engine.start() })));
    const failedRequired = results.filter((r) => !r.ok && r.engine.required).map((r) => r.engine);
    if (failedRequired.length > 0) {
      throw new Error(`required engine(s) failed to start: ${failedRequired.map((e) => `${e.id} (${e.lastError ?? 'unknown error'})`).join(', ')}`);
    }
    this.capabilitySet = undefined;
  }

  async stop(): Promise<void> {
    await Promise.all([...this.engineList, ...this.retiring].map((engine) => engine.stop()));
  }

  describe(): InitializeResult {
    // Computed once engines are known and then kept: capabilities are fixed (§13.2). An engine
    // first coming up later widens the set for new sessions only.
    // An engine's capabilities, once learned, are never forgotten, so a count tells what changed.
    let known = 0;
    for (const engine of this.engineList) if (engine.capabilities !== undefined) known++;
    if (!this.capabilitySet || known !== this.knownAtDescribe) {
      this.knownAtDescribe = known;
      this.capabilitySet = {
        protocolVersion: PROTOCOL_VERSION,
        server: { name: this.config.gateway.name, version: GATEWAY_VERSION },
        capabilities: deriveCapabilities(this.engineList, this.config.gateway),
        _meta: { conformance: 'L0', aggregator: true },
      };
    }
    return this.capabilitySet;
  }

  /** How many engines had known capabilities when the set was derived. */
  private knownAtDescribe = 0;

  async call(method: string, params: JsonObject, ctx: CallContext): Promise<JsonObject> {
    // The request runs on the engine set current now, even if a reload swaps it meanwhile.
    const lease = this.generations.enter();
    try {
      return await this.answer(method, params, ctx);
    } finally {
      this.generations.leave(lease);
    }
  }

  private answer(method: string, params: JsonObject, ctx: CallContext): Promise<JsonObject> {
    const fed = this.federation();
    switch (method) {
      case 'retrieve':
        return federatedRetrieve(params, ctx, fed);
      case 'catalog/list':
        return Promise.resolve({ engines: this.engineList.map((engine) => engine.catalogEntry(this.config.gateway.exposeEndpoints)) });
      case 'graph':
        return federatedGraph(params, ctx, fed);
      case 'index/add':
      case 'index/delete':
        return federatedWrite(method, params, ctx, fed);
      default:
        return routeToOne(method, params, ctx, fed);
    }
  }

  private federation(): FederationContext {
    return {
      engines: this.engineList,
      settings: this.config.gateway,
      logger: this.options.logger,
      identity: this.config.gateway.name,
      hooks: this.options.hooks ?? {},
      retryBudget: this.budgetFor(this.config.gateway.retry),
    };
  }

  /** One retry budget for the whole gateway (upstream/retry.ts); renewed only when a reload changes its settings. */
  private budgetFor(settings: GatewayConfig['gateway']['retry']): RetryBudget {
    if (this.retry?.settings === settings) return this.retry.budget; // the per-request path: one comparison
    const budget = this.retry && sameSettings(this.retry.settings, settings) ? this.retry.budget : new RetryBudget(settings);
    this.retry = { settings, budget };
    return budget;
  }

  private retry: { settings: GatewayConfig['gateway']['retry']; budget: RetryBudget } | undefined;

  /**
   * Hot reload (README, Operations): unchanged engines are kept with their connections, breaker
   * and state; new or changed ones are started before the switch; requests already running finish
   * on the set they started with; engines leaving the set are stopped once those requests are
   * done. Listener-bound settings keep their running values. Reloads run one at a time. Rejects
   * (leaving the old set in force) only when a `required` new engine cannot start.
   */
  reload(next: GatewayConfig): Promise<ReloadSummary & { ignoredSettings: string[] }> {
    const run = this.reloadChain.then(() => this.applyReload(next));
    this.reloadChain = run.catch(() => undefined);
    return run;
  }

  private async applyReload(next: GatewayConfig): Promise<ReloadSummary & { ignoredSettings: string[] }> {
    const { settings, ignored } = carryRestartOnly(this.config.gateway, next.gateway);
    const config: GatewayConfig = { ...next, gateway: settings };
    const plan = planReload(this.engineList, this.config.gateway, config);
    const created = new Map<string, Engine>();
    for (const slot of plan.slots) if ('create' in slot) created.set(slot.create.id, this.createEngine(slot.create, settings));
    const started = await Promise.all([...created.values()].map(async (engine) => ({ engine, ok: await engine.start() })));
    const failedRequired = started.filter((r) => !r.ok && r.engine.required).map((r) => r.engine);
    if (failedRequired.length > 0) {
      await Promise.all([...created.values()].map((engine) => engine.stop()));
      throw new Error(`required engine(s) failed to start: ${failedRequired.map((e) => `${e.id} (${e.lastError ?? 'unknown error'})`).join(', ')}`);
    }
    // The switch itself is synchronous: a request sees either the old set or the new one.
    for (const slot of plan.slots) if ('keep' in slot) slot.keep.retune(slot.config);
    this.engineList = plan.slots.map((slot) => ('keep' in slot ? slot.keep : created.get(slot.create.id)!));
    this.config = config;
    this.capabilitySet = undefined;
    this.knownAtDescribe = 0;
    for (const engine of plan.retire) this.retiring.add(engine);
    void this.generations.advance().then(() => Promise.all(plan.retire.map(async (engine) => {
      await engine.stop();
      this.retiring.delete(engine);
    })));
    return { ...plan.summary, ignoredSettings: ignored };
  }

  private createEngine(engineConfig: GatewayConfig['engines'][number], settings = this.config.gateway): Engine {
    return new Engine(engineConfig, settings, this.options.logger.child({ engine: engineConfig.id }), this.options.hooks, this.options.transports);
  }
}

function sameSettings(a: object, b: object): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}
