/**
 * Collapsing the hits that share one identity (§16.3): keep the body of the best-ranked origin,
 * merge `meta`, tag the origin (`meta.engine`, `engineRank`, `engineScore`, `fusedScore`) and say
 * whose body was kept (`meta.bodyEngine`).
 *
 * §16.3 only says a gateway SHOULD retain the richest body; choosing by length would let any
 * engine replace another's text and citation with a longer one of its own (a phishing
 * `citation.uri`) just by repeating its id. So the body comes from the origin that ranked the
 * document best, ties broken by the higher configured weight (the operator's trust in the
 * engine), then the smaller engine id — the same order that names `meta.engine`. Content is
 * never chosen on length.
 */
import { shallowCopy } from '../../protocol/copy.js';
import type { JsonObject } from '../../protocol/jsonrpc.js';
import { compareCodePoints } from './order.js';
import type { Contribution, EngineHit } from './types.js';

export interface FusedEntry {
  key: string;
  /** The kept body: the copy of the best-ranked origin. */
  hit: EngineHit;
  /** Rank and list weight of the origin whose body is kept. */
  bodyRank: number;
  bodyWeight: number;
  fused: number;
  weightSum: number;
  contributions: Contribution[];
  /** Other hits collapsed into this one (their meta is merged at the end). */
  others: EngineHit[] | undefined;
}

/**
 * Record another engine's copy of the same document, ranked `rank` in a list of `weight`. Copies
 * arrive in engine-id order, so on a full tie the earlier (smaller engine id) body stays.
 */
export function absorb(
  entry: Pick<FusedEntry, 'hit' | 'others' | 'bodyRank' | 'bodyWeight'>,
  hit: EngineHit,
  rank: number,
  weight: number,
): void {
  const better = rank < entry.bodyRank || (rank === entry.bodyRank && weight > entry.bodyWeight);
  const other = better ? entry.hit : hit;
  // A literal of one, not `[]` and a push: an empty array's first push reserves 17 slots.
  if (entry.others === undefined) entry.others = [other];
  else entry.others.push(other);
  if (better) {
    entry.hit = hit;
    entry.bodyRank = rank;
    entry.bodyWeight = weight;
  }
}

/** §16.3 total order: fused score desc, then summed weight desc, then smaller stringified id (code-point order, order.ts). */
export function compareEntries(
  a: Pick<FusedEntry, 'fused' | 'weightSum' | 'hit'>,
  b: Pick<FusedEntry, 'fused' | 'weightSum' | 'hit'>,
): number {
  if (a.fused !== b.fused) return b.fused - a.fused;
  if (a.weightSum !== b.weightSum) return b.weightSum - a.weightSum;
  return compareCodePoints(String(a.hit.id), String(b.hit.id));
}

function asObject(value: unknown): JsonObject | undefined {
  return value && typeof value === 'object' && !Array.isArray(value) ? (value as JsonObject) : undefined;
}

/**
 * Build the client-facing hit: fused score, merged meta, origin tags. Copied, then extended
 * (protocol/copy.ts says why not `{ ...hit, score, meta }`): the engine's key order, `meta` last
 * when the engine sent none.
 */
export function finalizeHit(entry: FusedEntry): EngineHit {
  const best = bestContribution(entry.contributions);
  const source = asObject(entry.hit.meta);
  let meta: JsonObject;
  if (source === undefined && !othersHaveMeta(entry.others)) {
    // No copy sent `meta`: the tags as one literal, in the order the branch below writes them (a
    // fixed shape, no copy of an empty object grown key by key).
    meta =
      entry.contributions.length > 1
        ? {
            engine: best.engine,
            bodyEngine: best.engine,
            engineRank: best.rank,
            engineScore: best.score,
            fusedScore: entry.fused,
            engines: originsOf(entry.contributions),
          }
        : { engine: best.engine, bodyEngine: best.engine, engineRank: best.rank, engineScore: best.score, fusedScore: entry.fused };
  } else {
    meta = source ? shallowCopy(source) : {};
    if (entry.others) {
      for (const other of entry.others) {
        const otherMeta = asObject(other.meta);
        if (!otherMeta) continue;
        for (const key in otherMeta) if (!(key in meta)) meta[key] = otherMeta[key];
      }
    }
    meta.engine = best.engine;
    meta.bodyEngine = best.engine; // the body kept is this origin's (absorb keeps the same order)
    meta.engineRank = best.rank;
    meta.engineScore = best.score;
    meta.fusedScore = entry.fused;
    if (entry.contributions.length > 1) meta.engines = originsOf(entry.contributions);
  }
  const hit = shallowCopy(entry.hit);
  hit.score = entry.fused;
  hit.meta = meta;
  return hit;
}

/** `meta.engines`: every origin of a hit merged from several engines. */
function originsOf(contributions: readonly Contribution[]): JsonObject[] {
  return contributions.map((c) => ({ engine: c.engine, rank: c.rank, score: c.score }));
}

/** Whether any collapsed copy carries a `meta` object to merge. */
function othersHaveMeta(others: readonly EngineHit[] | undefined): boolean {
  if (others === undefined) return false;
  for (const other of others) if (asObject(other.meta) !== undefined) return true;
  return false;
}

/** The contribution that names the hit's origin: best rank, then higher weight, then engine id. */
function bestContribution(contributions: readonly Contribution[]): Contribution {
  let best = contributions[0]!;
  for (let i = 1; i < contributions.length; i++) {
    const c = contributions[i]!;
    if (
      c.rank < best.rank ||
      (c.rank === best.rank && (c.weight > best.weight || (c.weight === best.weight && compareCodePoints(c.engine, best.engine) < 0)))
    ) {
      best = c;
    }
  }
  return best;
}
