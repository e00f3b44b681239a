/**
 * Collapsing the hits that share one identity (§16.3): keep the richest body, merge `meta`,
 * tag the origin (`meta.engine`, `engineRank`, `engineScore`, `fusedScore`).
 */
import type { JsonObject } from '../../protocol/jsonrpc.js';
import { compareCodePoints } from './order.js';
import type { Contribution, EngineHit } from './types.js';

export interface FusedEntry {
  key: string;
  hit: EngineHit;
  fused: number;
  weightSum: number;
  contributions: Contribution[];
  /** Other hits collapsed into this one (their meta is merged at the end). */
  others: EngineHit[] | undefined;
}

function bodySize(hit: EngineHit): number {
  const text = typeof hit.text === 'string' ? hit.text.length : 0;
  const content = Array.isArray(hit.content) ? hit.content.length : 0;
  return content * 1_000_000 + text; // more content blocks first, then longer text
}

/** Record another engine's copy of the same document; the richer body becomes the base. */
export function absorb(entry: Pick<FusedEntry, 'hit' | 'others'>, hit: EngineHit): void {
  if (bodySize(hit) > bodySize(entry.hit)) {
    (entry.others ??= []).push(entry.hit);
    entry.hit = hit;
  } else {
    (entry.others ??= []).push(hit);
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

/** Build the client-facing hit: fused score, merged meta, origin tags. */
export function finalizeHit(entry: FusedEntry): EngineHit {
  const best = bestContribution(entry.contributions);
  const meta: JsonObject = { ...asObject(entry.hit.meta) };
  if (entry.others) {
    for (const other of entry.others) {
      const otherMeta = asObject(other.meta);
      if (!otherMeta) continue;
      for (const key in otherMeta) if (!(key in meta)) meta[key] = otherMeta[key];
    }
  }
  meta.engine = best.engine;
  meta.engineRank = best.rank;
  meta.engineScore = best.score;
  meta.fusedScore = entry.fused;
  if (entry.contributions.length > 1) {
    meta.engines = entry.contributions.map((c) => ({ engine: c.engine, rank: c.rank, score: c.score }));
  }
  return { ...entry.hit, score: entry.fused, meta };
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
