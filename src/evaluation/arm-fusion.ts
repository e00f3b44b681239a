/**
 * An arm applied to per-engine ranked lists: the gateway's own first-page computation (§16.3
 * fusion in §10 window segments, core/federation/paging.ts `fusedPage`), with each engine's
 * window the depth the gateway would ask it for (core/federation/depth.ts: `fusionDepth` while
 * k ≤ fusionDepth, else `ceil(k × fusionHeadroom)`), within the engine's maxK.
 * Fetching every engine's list once per query and fusing locally lets one pass over the queries
 * serve any number of arms, and lets the tuner try hundreds of parameter sets without asking an
 * engine again. Lists are fetched two windows deep (`listDepth`): when the first window fuses to
 * fewer than k distinct hits the gateway deepens into the next segment, and so does this.
 */
import { routeEngineIds, type GatewayConfig } from '../core/config/schema.js';
import type { ArmConfig } from '../core/experiments/arms.js';
import { fusionLegDepth } from '../core/federation/depth.js';
import { fusedPage, segmentDepth } from '../core/federation/paging.js';
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
  fusionDepth: number;
  fusionHeadroom: number;
}

/** The parameters an arm's per-engine depth depends on. */
export type ArmDepth = Pick<ResolvedArm, 'fusionDepth' | 'fusionHeadroom'>;

/** One engine's answer to one query, raw scores, best first. */
export interface EngineList {
  engine: string;
  hits: EngineHit[];
  /** The engine's advertised `retrieve.scoreFloor` (convex fusion needs it). */
  scoreFloor?: number;
  /** The engine's advertised `retrieve.maxK`: the gateway never asks it for more at once. */
  maxK?: number;
}

/** The engine limits fusion depth depends on. */
export type EngineLimits = Pick<EngineList, 'engine' | 'maxK'>;

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
    fusionDepth: arm.fusionDepth ?? settings.fusionDepth,
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

/** What the gateway asks each engine for at `k` (the live rule, core/federation/depth.ts), at least 1. */
export function armDepth(arm: ArmDepth, k: number): number {
  return Math.max(1, fusionLegDepth(k, arm));
}

/** An engine's first window for this arm: the arm's depth within the engine's maxK. */
export function windowOf(arm: ArmDepth, engine: EngineLimits, k: number): number {
  return Math.min(armDepth(arm, k), engine.maxK ?? Infinity);
}

/** How deep to fetch each engine's list so every arm can be fused from it (two windows). */
export function listDepth(arms: readonly ArmDepth[], engines: readonly EngineLimits[], k: number): number {
  let depth = 1;
  for (const arm of arms) for (const engine of engines) depth = Math.max(depth, 2 * windowOf(arm, engine, k));
  return depth;
}

/** Segment rounds one page may take (core/federation/pages.ts allows the same). */
const MAX_SEGMENT_ROUNDS = 12;

/**
 * The arm's top `k` for one query, from the engines' lists. Engines of the arm that have no list
 * (they failed) are left out, as the gateway degrades (§16.2); undefined when none is left.
 */
export async function fuseArm(arm: ResolvedArm, lists: ReadonlyMap<string, EngineList>, k: number): Promise<EngineHit[] | undefined> {
  const ranked: RankedList[] = [];
  const depth: Record<string, number> = {};
  for (const id of arm.engines) {
    const list = lists.get(id);
    if (list === undefined) continue;
    depth[id] = windowOf(arm, list, k);
    ranked.push({
      engine: id,
      weight: arm.weights[id]!,
      hits: list.hits,
      ...(list.scoreFloor !== undefined ? { scoreFloor: list.scoreFloor } : {}),
    });
  }
  if (ranked.length === 0) return undefined;
  // An engine can go deeper into a segment only as far as its fetched list reaches.
  const fetch = (segment: number) =>
    Promise.resolve({
      lists: ranked,
      deeper: new Set(ranked.filter((list) => list.hits.length > segmentDepth(depth[list.engine]!, segment)).map((list) => list.engine)),
    });
  const page = await fusedPage(
    { segment: 0, offset: 0 },
    {
      k,
      method: arm.fusion,
      fusion: { rrfK: arm.rrfK, dedup: arm.dedup },
      depth,
      maxRounds: MAX_SEGMENT_ROUNDS,
    },
    fetch,
  );
  return page.hits;
}

/** The arm as a config value (`gateway.experiments.arms.<name>`), for printing. */
export function armConfigOf(arm: ResolvedArm): ArmConfig {
  return {
    engines: arm.engines,
    weights: arm.weights,
    fusion: arm.fusion,
    ...(arm.fusion === 'rrf' ? { rrfK: arm.rrfK } : {}),
    dedup: arm.dedup,
    fusionDepth: arm.fusionDepth,
    fusionHeadroom: arm.fusionHeadroom,
  };
}
