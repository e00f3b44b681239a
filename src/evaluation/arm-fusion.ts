/**
 * An arm applied to per-engine ranked lists: the same §16.3 fusion the gateway runs
 * (core/federation/fusion), on each engine's list cut to the depth the gateway would have asked
 * that engine for (`min(ceil(k × fusionHeadroom), what the engine returned)`). Fetching every
 * engine's list once per query and fusing locally lets one pass over the queries serve any number
 * of arms, and lets the tuner try hundreds of parameter sets without asking an engine again.
 */
import { routeEngineIds, type GatewayConfig } from '../core/config/schema.js';
import type { ArmConfig } from '../core/experiments/arms.js';
import { fuse } from '../core/federation/fusion/fuse.js';
import type { DedupPolicy, EngineHit, FusionMethod, RankedList } from '../core/federation/fusion/types.js';

/** An arm with every parameter decided (gateway defaults filled in). */
export interface ResolvedArm {
  name: string;
  engines: string[];
  /** Weight of every engine of the arm. */
  weights: Record<string, number>;
  fusion: FusionMethod;
  rrfK: number;
  dedup: DedupPolicy;
  fusionHeadroom: number;
}

/** One engine's answer to one query, raw scores, best first. */
export interface EngineList {
  engine: string;
  hits: EngineHit[];
  /** The engine's advertised `retrieve.scoreFloor` (convex fusion needs it). */
  scoreFloor?: number;
}

export function resolveArm(name: string, arm: ArmConfig, config: GatewayConfig): ResolvedArm {
  const settings = config.gateway;
  const weights: Record<string, number> = {};
  for (const id of arm.engines) {
    weights[id] = arm.weights?.[id] ?? config.engines.find((engine) => engine.id === id)?.weight ?? 1;
  }
  return {
    name,
    engines: [...arm.engines],
    weights,
    fusion: arm.fusion ?? settings.fusion,
    rrfK: arm.rrfK ?? settings.rrfK,
    dedup: arm.dedup ?? settings.dedup,
    fusionHeadroom: arm.fusionHeadroom ?? settings.fusionHeadroom,
  };
}

/** The name of the arm that is the gateway as configured (all engines, or the retrieve route's). */
export const GATEWAY_ARM = 'fused';

/**
 * The arms a config implies: each engine alone, the gateway as configured (`fused`), then the
 * arms of `gateway.experiments.arms` (which win a name clash).
 */
export function configArms(config: GatewayConfig): ResolvedArm[] {
  const arms = new Map<string, ResolvedArm>();
  for (const engine of config.engines) arms.set(engine.id, resolveArm(engine.id, { engines: [engine.id] }, config));
  const route = config.gateway.routes.retrieve;
  const routeOptions = route !== undefined && typeof route === 'object' && !Array.isArray(route) ? route : {};
  const engines = routeEngineIds(route) ?? config.engines.map((engine) => engine.id);
  if (!arms.has(GATEWAY_ARM)) arms.set(GATEWAY_ARM, resolveArm(GATEWAY_ARM, { engines, ...pick(routeOptions) }, config));
  for (const [name, arm] of Object.entries(config.gateway.experiments?.arms ?? {})) arms.set(name, resolveArm(name, arm, config));
  return [...arms.values()];
}

function pick(options: { fusion?: FusionMethod; dedup?: DedupPolicy; rrfK?: number }): Partial<ArmConfig> {
  return {
    ...(options.fusion !== undefined ? { fusion: options.fusion } : {}),
    ...(options.dedup !== undefined ? { dedup: options.dedup } : {}),
    ...(options.rrfK !== undefined ? { rrfK: options.rrfK } : {}),
  };
}

/** How deep each engine's list must be for this arm at `k`. */
export function armDepth(arm: Pick<ResolvedArm, 'fusionHeadroom'>, k: number): number {
  return Math.max(1, Math.ceil(k * arm.fusionHeadroom));
}

/**
 * The arm's top `k` for one query, from the engines' lists. Engines of the arm that have no list
 * (they failed) are left out, as the gateway degrades (§16.2); undefined when none is left.
 */
export function fuseArm(arm: ResolvedArm, lists: ReadonlyMap<string, EngineList>, k: number): EngineHit[] | undefined {
  const depth = armDepth(arm, k);
  const ranked: RankedList[] = [];
  for (const id of arm.engines) {
    const list = lists.get(id);
    if (list === undefined) continue;
    ranked.push({
      engine: id,
      weight: arm.weights[id]!,
      hits: list.hits.length > depth ? list.hits.slice(0, depth) : list.hits,
      ...(list.scoreFloor !== undefined ? { scoreFloor: list.scoreFloor } : {}),
    });
  }
  if (ranked.length === 0) return undefined;
  return fuse(ranked, arm.fusion, { k, rrfK: arm.rrfK, dedup: arm.dedup }).hits;
}

/** The arm as a config value (`gateway.experiments.arms.<name>`), for printing. */
export function armConfigOf(arm: ResolvedArm): ArmConfig {
  return {
    engines: arm.engines,
    weights: arm.weights,
    fusion: arm.fusion,
    ...(arm.fusion === 'rrf' ? { rrfK: arm.rrfK } : {}),
    dedup: arm.dedup,
    fusionHeadroom: arm.fusionHeadroom,
  };
}
