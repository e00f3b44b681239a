/**
 * Composition root: config → engines → the RCP service the transports serve.
 * The service is the gateway as an RCP server (§7.13 aggregator): it answers `retrieve` by
 * federation, `catalog/list` from its engines, and routes every other method to one engine.
 */
import type { GatewayConfig } from './config/schema.js';
import type { InitializeResult } from './protocol/capabilities.js';
import { PROTOCOL_VERSION } from './protocol/capabilities.js';
import type { JsonObject } from './protocol/jsonrpc.js';
import type { Logger } from './observability/log.js';
import type { CallContext, RcpService } from './server/service.js';
import { Engine, type EngineHooks } from './upstream/engine.js';
import { deriveCapabilities } from './federation/capabilities.js';
import type { FederationContext, FederationHooks } from './federation/context.js';
import { federatedRetrieve } from './federation/retrieve.js';
import { routeToOne } from './federation/routing.js';
import { federatedGraph } from './federation/graph.js';

export const GATEWAY_VERSION = '0.1.0';

export interface GatewayOptions {
  logger: Logger;
  hooks?: FederationHooks & EngineHooks;
  /** How long `start()` waits for engines to initialize before serving anyway. */
  startupWaitMs?: number;
}

export class Gateway implements RcpService {
  private engineList: Engine[];
  private capabilitySet: InitializeResult | undefined;

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
    await Promise.all(this.engineList.map((engine) => engine.stop()));
  }

  describe(): InitializeResult {
    // Computed once engines are known and then kept: capabilities are fixed (§13.2). An engine
    // first coming up later widens the set for new sessions only.
    if (!this.capabilitySet || this.engineList.some((e) => e.capabilities !== undefined && !this.knownAtDescribe.has(e.id))) {
      this.knownAtDescribe = new Set(this.engineList.filter((e) => e.capabilities !== undefined).map((e) => e.id));
      this.capabilitySet = {
        protocolVersion: PROTOCOL_VERSION,
        server: { name: this.config.gateway.name, version: GATEWAY_VERSION },
        capabilities: deriveCapabilities(this.engineList, this.config.gateway),
        _meta: { conformance: 'L0', aggregator: true },
      };
    }
    return this.capabilitySet;
  }

  private knownAtDescribe = new Set<string>();

  call(method: string, params: JsonObject, ctx: CallContext): Promise<JsonObject> {
    const fed = this.federation();
    switch (method) {
      case 'retrieve':
        return federatedRetrieve(params, ctx, fed);
      case 'catalog/list':
        return Promise.resolve({ engines: this.engineList.map((engine) => engine.catalogEntry(this.config.gateway.exposeEndpoints)) });
      case 'graph':
        return federatedGraph(params, ctx, fed);
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
    };
  }

  private createEngine(engineConfig: GatewayConfig['engines'][number]): Engine {
    return new Engine(engineConfig, this.config.gateway, this.options.logger.child({ engine: engineConfig.id }), this.options.hooks);
  }
}
