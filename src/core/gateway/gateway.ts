/**
 * Composition root: config → engines → the RCP service the transports serve.
 * The service is the gateway as an RCP server (§7.13 aggregator): each call runs on the live
 * engine set (ops/engine-set.ts, which also owns hot reload) and is answered by the handler the
 * method table (methods.ts) names for it.
 */
import type { GatewayConfig } from '../config/schema.js';
import type { InitializeResult } from '../protocol/capabilities.js';
import { PROTOCOL_VERSION } from '../protocol/capabilities.js';
import { ErrorCode, RcpError } from '../protocol/errors.js';
import type { JsonObject } from '../protocol/jsonrpc.js';
import type { Logger } from '../observability/logger.js';
import type { CallContext, RcpService } from '../service/contract.js';
import { Engine, type EngineHooks } from '../upstream/engine.js';
import { RetryBudget } from '../resilience/retry.js';
import { deriveCapabilities, describeMeta } from '../federation/capabilities.js';
import type { FederationContext, FederationHooks } from '../federation/context.js';
import { EngineSet, type ReloadOutcome } from '../ops/engine-set.js';
import { methodHandler } from './methods.js';
import { ExperimentRuntime } from '../experiments/runtime.js';
import type { TransportFactory } from '../upstream/transport.js';
import { scopeEngines, scopeSettings } from '../auth/scoping.js';
import type { Principal } from '../auth/principal.js';

export interface GatewayOptions {
  logger: Logger;
  hooks?: FederationHooks & EngineHooks;
  /** Builds each engine's transport: the runtime's choice (node/upstream/factory.ts under Node). */
  transports: TransportFactory;
  /** The gateway's own version, reported in `initialize`/`info` (`server.version`, §7.1); omitted when absent. */
  version?: string;
}

export class Gateway implements RcpService {
  private readonly engineSet: EngineSet<Engine>;
  /** Live experiments' per-replica state (shadow gates, the report's tallies); idle without experiments. */
  private readonly experiments: ExperimentRuntime;

  constructor(
    config: GatewayConfig,
    private readonly options: GatewayOptions,
  ) {
    this.experiments = new ExperimentRuntime(options.hooks);
    this.engineSet = new EngineSet(config, (engineConfig, settings) => this.createEngine(engineConfig, settings));
  }

  get engines(): readonly Engine[] {
    return this.engineSet.engines;
  }

  get settings(): GatewayConfig['gateway'] {
    return this.config.gateway;
  }

  get defaultDeadlineMs(): number {
    return this.config.gateway.deadlineMs;
  }

  private get config(): GatewayConfig {
    return this.engineSet.config;
  }

  /** Start every engine concurrently. Throws only when a `required` engine cannot start. */
  async start(): Promise<void> {
    await this.engineSet.start();
    this.describedSets.clear();
  }

  stop(): Promise<void> {
    return this.engineSet.stop();
  }

  describe(principal?: Principal): InitializeResult {
    // Computed once engines are known and then kept: capabilities are fixed (§13.2). An engine
    // first coming up later widens the set for new sessions only.
    // An engine's capabilities, once learned, are never forgotten, so a count tells what changed
    // within one engine set; a reload makes a new set.
    let known = 0;
    for (const engine of this.engines) if (engine.capabilities !== undefined) known++;
    const revision = this.engineSet.revision;
    if (known !== this.knownAtDescribe || revision !== this.revisionAtDescribe) {
      this.knownAtDescribe = known;
      this.revisionAtDescribe = revision;
      this.describedSets.clear();
    }
    // §15.6: a principal scoped to some engines is told what those engines can do, nothing more.
    const scope = principal?.limits.engines;
    const key = scope === undefined ? undefined : scope.join('\u0000');
    let described = this.describedSets.get(key);
    if (!described) {
      described = this.describeEngines(scopeEngines(this.engines, principal));
      this.describedSets.set(key, described);
    }
    return described;
  }

  private describeEngines(engines: readonly Engine[]): InitializeResult {
    const { name } = this.config.gateway;
    return {
      protocolVersion: PROTOCOL_VERSION,
      server: this.options.version === undefined ? { name } : { name, version: this.options.version },
      capabilities: deriveCapabilities(engines, this.config.gateway),
      _meta: describeMeta(engines, this.config.gateway),
    };
  }

  /** The full capability set (key undefined) and each engine scope's (principals' `limits.engines`). */
  private readonly describedSets = new Map<string | undefined, InitializeResult>();

  /** How many engines had known capabilities, and which engine set, when the set was derived. */
  private knownAtDescribe = 0;
  private revisionAtDescribe = 0;

  call(method: string, params: JsonObject, ctx: CallContext): Promise<JsonObject> {
    // The request runs on the engine set current now, even if a reload swaps it meanwhile.
    const handler = methodHandler(method);
    return this.engineSet
      .run((engines, config) => handler(method, params, ctx, this.federation(engines, config, ctx)))
      .catch((err: unknown) => {
        if (err instanceof RcpError) throw err;
        // A fault of the gateway's own code: -32603 to the client, the stack in the log.
        const error = err instanceof Error ? err : new Error(String(err));
        this.options.logger.error({ method, err: { message: error.message, stack: error.stack } }, 'gateway error');
        throw new RcpError(ErrorCode.InternalError, 'internal error', { detail: 'gateway error' });
      });
  }

  /** Hot reload (ops/engine-set.ts); rejects, leaving the old set in force, when a `required` new engine cannot start. */
  reload(next: GatewayConfig): Promise<ReloadOutcome> {
    return this.engineSet.reload(next);
  }

  /** The federation a call runs on: only the engines, maxK and cursor key its principal is scoped to (core/auth/scoping.ts). */
  private federation(engines: readonly Engine[], config: GatewayConfig, ctx: CallContext): FederationContext {
    return {
      engines: scopeEngines(engines, ctx.principal),
      settings: scopeSettings(config.gateway, ctx.principal),
      logger: this.options.logger,
      identity: config.gateway.name,
      hooks: this.options.hooks ?? {},
      retryBudget: this.budgetFor(config.gateway.retry),
      experiments: this.experiments,
    };
  }

  /** One retry budget for the whole gateway (resilience/retry.ts); renewed only when a reload changes its settings. */
  private budgetFor(settings: GatewayConfig['gateway']['retry']): RetryBudget {
    if (this.retry?.settings === settings) return this.retry.budget; // the per-request path: one comparison
    const budget = this.retry && sameSettings(this.retry.settings, settings) ? this.retry.budget : new RetryBudget(settings);
    this.retry = { settings, budget };
    return budget;
  }

  private retry: { settings: GatewayConfig['gateway']['retry']; budget: RetryBudget } | undefined;

  private createEngine(engineConfig: GatewayConfig['engines'][number], settings = this.config.gateway): Engine {
    return new Engine(engineConfig, settings, {
      logger: this.options.logger.child({ engine: engineConfig.id }),
      transports: this.options.transports,
      hooks: this.options.hooks,
      version: this.options.version,
    });
  }
}

function sameSettings(a: object, b: object): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}
