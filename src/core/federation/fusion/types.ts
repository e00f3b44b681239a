/** Shapes shared by the pure fusion functions (§16.3). */
import type { JsonObject } from '../../protocol/jsonrpc.js';

/** A hit as an engine returned it, already sanitized (id string|number, finite score). */
export interface EngineHit extends JsonObject {
  id: string | number;
  score: number;
}

/** One engine's ranked list, best first. */
export interface RankedList {
  engine: string;
  weight: number;
  hits: readonly EngineHit[];
  /** §6.1 `retrieve.scoreFloor`, when the engine advertised one (convex fusion). */
  scoreFloor?: number;
  /** The id space the engine's ids live in (config `idSpace`); absent = the shared default space. */
  idSpace?: string;
  /**
   * No two hits share a stringified id (what sanitizeHits makes of an answer): set by the list's
   * maker, it lets `fuse` take a lone list's own order without tracking duplicates.
   */
  distinctIds?: boolean;
}

export type DedupPolicy = 'id' | 'citation.uri' | 'content-hash';
export type FusionMethod = 'rrf' | 'weighted' | 'convex';

export interface FusionOptions {
  /** Cut the fused list to this many hits: a whole number, or `Infinity` for all. */
  k: number;
  rrfK: number;
  dedup: DedupPolicy;
  /** Identities (dedup keys) to leave out of the result, e.g. hits an earlier page served. */
  exclude?: ReadonlySet<string>;
}

export interface Contribution {
  engine: string;
  rank: number;
  score: number;
  weight: number;
}
