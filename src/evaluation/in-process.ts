/**
 * Arms evaluated in this process: a gateway built from a config file exactly as `rcp-gateway
 * serve` builds one (config loader, Gateway, start), asked once per query and engine for that
 * engine's ranked list (`_meta["x-rcpgw"].engines = [id]`), then every arm fused locally from
 * those lists (arm-fusion.ts).
 */
import { loadConfigFile } from '../node/config/load.js';
import { createLogger } from '../node/observability/log.js';
import { Gateway } from '../core/gateway/gateway.js';
import { nodeTransports } from '../node/upstream/factory.js';
import type { GatewayConfig } from '../core/config/schema.js';
import type { CallContext } from '../core/service/contract.js';
import { traceContext } from '../core/protocol/trace.js';
import type { EngineHit } from '../core/federation/fusion/types.js';
import { isJsonObject, type JsonObject } from '../core/protocol/jsonrpc.js';
import { configArms, fuseArm, listDepth, type EngineLimits, type EngineList, type ResolvedArm } from './arm-fusion.js';
import { UsageError, type ArmAnswers, type Backend, type QueryBudget } from './backend.js';
import type { Query } from './trec.js';

/** How long an engine may take to become ready before the evaluation gives up on it. */
const STARTUP_WAIT_MS = 60_000;

export class InProcessGateway implements Backend {
  private requestId = 0;

  private constructor(
    private readonly gateway: Gateway,
    readonly config: GatewayConfig,
    readonly resolvedArms: ResolvedArm[],
  ) {}

  /**
   * Loads `configFile`, keeps the arms named in `only` (all when absent; an unknown name throws),
   * and starts the engines. `maxDepth` raises the gateway's `maxK` so an engine list can be as
   * deep as the deepest arm needs (the engine's own maxK still applies, as in serving).
   */
  static async start(configFile: string, options: { only?: readonly string[]; maxDepth: number }): Promise<InProcessGateway> {
    const { config } = loadConfigFile(configFile);
    const all = configArms(config);
    const arms =
      options.only === undefined
        ? all
        : options.only.map((name) => {
            const arm = all.find((a) => a.name === name);
            if (!arm) throw new UsageError(`unknown arm "${name}" (this config has: ${all.map((a) => a.name).join(', ')})`);
            return arm;
          });
    config.gateway.maxK = Math.max(config.gateway.maxK, options.maxDepth);
    const gateway = new Gateway(config, { logger: createLogger({ level: 'error', format: 'json' }), transports: nodeTransports });
    try {
      await gateway.start();
    } catch (err) {
      await gateway.stop();
      throw err;
    }
    const evaluator = new InProcessGateway(gateway, config, arms);
    await evaluator.waitForEngines();
    return evaluator;
  }

  /**
   * An engine that is slow to come up (or down and restarting) would fail every query it is asked
   * in the meantime: wait until each engine the arms use is ready, or fail naming it.
   */
  private async waitForEngines(): Promise<void> {
    const used = new Set(this.engineIds);
    const engines = this.gateway.engines.filter((engine) => used.has(engine.id));
    const ready = await Promise.all(engines.map((engine) => engine.waitReady(STARTUP_WAIT_MS)));
    const late = engines.filter((_, i) => !ready[i]);
    if (late.length > 0) {
      await this.gateway.stop();
      throw new Error(
        `engine(s) not ready after ${STARTUP_WAIT_MS / 1000} s: ${late.map((e) => `${e.id} (${e.status}${e.lastError ? `: ${e.lastError}` : ''})`).join(', ')}`,
      );
    }
  }

  get arms(): string[] {
    return this.resolvedArms.map((arm) => arm.name);
  }

  /** Every engine the kept arms use, in config order. */
  get engineIds(): string[] {
    const used = new Set(this.resolvedArms.flatMap((arm) => arm.engines));
    return this.config.engines.map((engine) => engine.id).filter((id) => used.has(id));
  }

  /** Each engine's advertised maxK (once started), which bounds the depth the gateway asks it for. */
  get engineLimits(): EngineLimits[] {
    return this.engineIds.map((id) => {
      const maxK = this.gateway.engines.find((engine) => engine.id === id)?.capabilities?.retrieve?.maxK;
      return { engine: id, ...(typeof maxK === 'number' ? { maxK } : {}) };
    });
  }

  async answer(query: Query, k: number, budget: QueryBudget): Promise<ArmAnswers> {
    const depth = listDepth(this.resolvedArms, this.engineLimits, k);
    const { lists, errors } = await this.engineLists(query, depth, budget, this.engineIds);
    const answers: ArmAnswers = new Map();
    for (const arm of this.resolvedArms) {
      const hits = await fuseArm(arm, lists, k);
      answers.set(
        arm.name,
        hits === undefined
          ? new Error(arm.engines.map((id) => `${id}: ${errors.get(id)?.message ?? 'no answer'}`).join('; '))
          : hits.map((hit) => ({ id: String(hit.id), score: hit.score })),
      );
    }
    return answers;
  }

  /** Each engine's list for `query`, `depth` deep; engines that failed are in `errors` instead. */
  async engineLists(
    query: Query,
    depth: number,
    budget: QueryBudget,
    engineIds: readonly string[] = this.engineIds,
  ): Promise<{ lists: Map<string, EngineList>; errors: Map<string, Error> }> {
    const lists = new Map<string, EngineList>();
    const errors = new Map<string, Error>();
    await Promise.all(
      engineIds.map(async (id) => {
        try {
          // RRF over one list keeps the engine's own order, whatever the gateway's default strategy.
          const params: JsonObject = { query: query.text, k: depth, _meta: { 'x-rcpgw': { engines: [id], fusion: 'rrf' } } };
          const result = await this.gateway.call('retrieve', params, this.context(budget));
          const cap = this.gateway.engines.find((engine) => engine.id === id)?.capabilities?.retrieve;
          const floor = cap?.scoreFloor;
          const maxK = cap?.maxK;
          lists.set(id, {
            engine: id,
            hits: rawHits(result),
            ...(typeof floor === 'number' ? { scoreFloor: floor } : {}),
            ...(typeof maxK === 'number' ? { maxK } : {}),
          });
        } catch (err) {
          errors.set(id, err instanceof Error ? err : new Error(String(err)));
        }
      }),
    );
    return { lists, errors };
  }

  close(): Promise<void> {
    return this.gateway.stop();
  }

  private context(budget: QueryBudget): CallContext {
    return {
      method: 'retrieve',
      requestId: `eval-${++this.requestId}`,
      signal: budget.signal,
      deadlineAt: performance.now() + budget.deadlineMs,
      deadlineMs: budget.deadlineMs,
      progress: undefined,
      log: undefined,
      meta: {},
      trace: traceContext({}, undefined),
      transport: 'stdio',
      headers: {},
    };
  }
}

/** The engine's own hits back from a one-engine fusion: its raw score is in `meta.engineScore`. */
function rawHits(result: JsonObject): EngineHit[] {
  const hits = Array.isArray(result.hits) ? result.hits : [];
  return hits.filter(isJsonObject).map((hit) => {
    const meta = isJsonObject(hit.meta) ? hit.meta : {};
    const raw = typeof meta.engineScore === 'number' ? meta.engineScore : hit.score;
    return { ...hit, id: hit.id as string | number, score: typeof raw === 'number' ? raw : 0 };
  });
}
