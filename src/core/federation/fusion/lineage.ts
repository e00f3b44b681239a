/**
 * Fusion lineage, a debugging aid (the operator console's search explorer): for a fused page,
 * each engine's own ranked list and, per fused hit, what each engine contributed to its fused
 * score (§16.3). Pure, and computed only when a request asks for it (`_meta["x-rcpgw"].lineage`).
 *
 * The contributions come from the origin tags `finalizeHit` put on each hit (`meta.engine`,
 * `engineRank`, `engineScore`, and `meta.engines` when several engines voted), scored by the same
 * scorer `fuse` used, summed in the same engine-id order: they add up to `fusedScore` exactly.
 */
import type { JsonObject } from '../../protocol/jsonrpc.js';
import { scorerFor } from './fuse.js';
import type { EngineHit, FusionMethod, RankedList } from './types.js';

/** Longest text excerpt kept per engine hit (the explorer shows a line, not the document). */
const EXCERPT_CHARS = 120;

export interface LineageContribution extends JsonObject {
  engine: string;
  rank: number;
  score: number;
  weight: number;
  /** This engine's share of the fused score. */
  contribution: number;
}

export interface FusionLineage extends JsonObject {
  method: FusionMethod;
  rrfK: number;
  /** Each engine's own list, as it answered (id, rank, the engine's score, a text excerpt). */
  lists: Array<{ engine: string; weight: number; hits: Array<{ id: string | number; rank: number; score: number; text?: string }> }>;
  /** Per fused hit, in fused order: the contributions that sum to `fusedScore`. */
  hits: Array<{ id: string | number; fusedScore: number; contributions: LineageContribution[] }>;
}

interface Vote {
  engine: string;
  rank: number;
  score: number;
}

function votesOf(hit: EngineHit): Vote[] {
  const meta = (hit.meta ?? {}) as JsonObject;
  if (Array.isArray(meta.engines)) return meta.engines as unknown as Vote[];
  if (typeof meta.engine === 'string' && typeof meta.engineRank === 'number' && typeof meta.engineScore === 'number') {
    return [{ engine: meta.engine, rank: meta.engineRank, score: meta.engineScore }];
  }
  return [];
}

function excerpt(hit: EngineHit): string | undefined {
  if (typeof hit.text !== 'string') return undefined;
  return hit.text.length > EXCERPT_CHARS ? `${hit.text.slice(0, EXCERPT_CHARS)}…` : hit.text;
}

/** Lineage of `fused` (the hits `fuse` returned over `lists` with `method` and `rrfK`). */
export function fusionLineage(
  lists: readonly RankedList[],
  fused: readonly EngineHit[],
  method: FusionMethod,
  rrfK: number,
): FusionLineage {
  const ordered = [...lists].sort((a, b) => (a.engine < b.engine ? -1 : a.engine > b.engine ? 1 : 0));
  const byEngine = new Map(ordered.map((list) => [list.engine, list]));
  const scorer = scorerFor(ordered, method, rrfK);
  const hits = fused.map((hit) => {
    const votes = votesOf(hit).sort((a, b) => (a.engine < b.engine ? -1 : a.engine > b.engine ? 1 : 0));
    const contributions: LineageContribution[] = [];
    for (const vote of votes) {
      const list = byEngine.get(vote.engine);
      if (!list) continue;
      const own = list.hits[vote.rank - 1] ?? { id: hit.id, score: vote.score };
      contributions.push({ ...vote, weight: list.weight, contribution: scorer(list, vote.rank, own) });
    }
    return { id: hit.id, fusedScore: hit.score, contributions };
  });
  return {
    method,
    rrfK,
    lists: ordered.map((list) => ({
      engine: list.engine,
      weight: list.weight,
      hits: list.hits.map((hit, i) => {
        const text = excerpt(hit);
        return { id: hit.id, rank: i + 1, score: hit.score, ...(text !== undefined ? { text } : {}) };
      }),
    })),
    hits,
  };
}
