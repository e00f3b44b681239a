/**
 * Fusion of per-engine ranked lists (§16.3), pure. RRF is the default and always legal;
 * weighted (per-engine min-max) and convex (min anchored at the advertised `scoreFloor`) use
 * normalised scores. One scoring pass, then the best `k` in order (insertion into the best so far
 * for a page-sized `k`, a bounded heap when a larger `k` is a small share of the candidates, else
 * one sort).
 */
import { dedupKey, spacedId } from './dedup.js';
import { bestEntries } from './best-k.js';
import { absorb, finalizeHit, type FusedEntry } from './merge.js';
import { compareCodePoints } from './order.js';
import type { EngineHit, FusionMethod, FusionOptions, RankedList } from './types.js';

export interface FusionResult {
  hits: EngineHit[];
  /** The strategy actually applied (convex falls back to RRF without floors). */
  method: FusionMethod;
  notes: string[];
  /** Distinct identities fused, before the cut to `k`. */
  total: number;
}

/** One engine's share of a hit's fused score (RRF: weight / (rrfK + rank); else the weighted normalised score). */
export type Scorer = (list: RankedList, rank: number, hit: EngineHit) => number;

const rrfScorer =
  (rrfK: number): Scorer =>
  (list, rank) =>
    list.weight / (rrfK + rank);

/** Per-engine normaliser: min-max over the returned set, or [floor, max] for convex. */
function normalisedScorer(lists: readonly RankedList[], useFloor: boolean): Scorer {
  const bounds = new Map<RankedList, { low: number; span: number; scale: number }>();
  for (const list of lists) {
    let max = -Infinity;
    let min = Infinity;
    for (const hit of list.hits) {
      if (hit.score > max) max = hit.score;
      if (hit.score < min) min = hit.score;
    }
    const low = useFloor && list.scoreFloor !== undefined ? list.scoreFloor : min;
    // An engine's finite scores (or its advertised floor) far apart, such as ±1.7e308, make
    // `max - low` overflow to Infinity and the top hit's score NaN (a `null` score in the answer,
    // and no consistent order to page by). Such a range is taken in halves, which cannot overflow;
    // any other keeps the exact differences (halving a tiny score would round it).
    const scale = Number.isFinite(max - low) ? 1 : 0.5;
    bounds.set(list, { low: low * scale, span: max * scale - low * scale, scale });
  }
  return (list, _rank, hit) => {
    const b = bounds.get(list)!;
    // A degenerate range normalises to 1 under min-max (one hit, or all equal: the engine ranks
    // it top) but to 0 under convex, where max = floor means every score sits at the floor.
    const norm = b.span > 0 ? (hit.score * b.scale - b.low) / b.span : useFloor ? 0 : 1;
    return list.weight * Math.min(1, Math.max(0, norm));
  };
}

/** The scorer `fuse` applies for `method` (already resolved: convex only when every list has a floor). */
export function scorerFor(lists: readonly RankedList[], method: FusionMethod, rrfK: number): Scorer {
  return method === 'rrf' ? rrfScorer(rrfK) : normalisedScorer(lists, method === 'convex');
}

export function fuse(unordered: readonly RankedList[], method: FusionMethod, options: FusionOptions): FusionResult {
  if (unordered.length === 1 && method === 'rrf' && options.dedup === 'id') {
    const own = loneListInOwnOrder(unordered[0]!, options);
    if (own !== undefined) return own;
  }
  // Engine-id order, so sums, merges and tags never depend on the order engines answered in.
  const lists = inEngineOrder(unordered);
  const notes: string[] = [];
  let applied: FusionMethod = method;
  if (method === 'convex' && lists.some((list) => list.scoreFloor === undefined)) {
    // §16.3: convex only when every participating engine advertises scoreFloor; else RRF.
    const missing = lists.filter((list) => list.scoreFloor === undefined).map((list) => list.engine);
    notes.push(`fusion: convex needs scoreFloor from every engine (missing: ${missing.join(', ')}); fell back to rrf`);
    applied = 'rrf';
  }
  const scorer = scorerFor(lists, applied, options.rrfK);
  // Normalisation bounds are taken over each engine's whole returned list, before exclusion, so a
  // hit's fused score does not depend on which page it is served on.

  // One light record per identity while scoring; the full FusedEntry (with its list of
  // contributions) is built only for the k that are returned. Most identities come from one
  // engine, so a vote is kept as (list, rank) numbers rather than an object in an array.
  const entries = new Map<string, Accumulator>();
  const arrived: Accumulator[] = [];
  const byId = options.dedup === 'id';
  const exclude = exclusionOf(options);
  let group = -1; // lists of one engine are adjacent (sorted by engine): one vote per group
  for (let l = 0; l < lists.length; l++) {
    const list = lists[l]!;
    if (l === 0 || list.engine !== lists[l - 1]!.engine) group++;
    const hits = list.hits;
    for (let i = 0; i < hits.length; i++) {
      const hit = hits[i]!;
      const rank = i + 1;
      // Under `id` the map is keyed by the id string itself (its hash is cached on the string);
      // the prefixed dedup key is built only to consult an exclusion set.
      const key = byId ? spacedId(hit.id, list.idSpace) : dedupKey(hit, options.dedup, list.idSpace);
      if (exclude?.has(byId ? dedupKey(hit, 'id', list.idSpace) : key)) continue; // already served on an earlier page (§10)
      const contribution = scorer(list, rank, hit);
      const entry = entries.get(key);
      if (entry === undefined) {
        const created: Accumulator = {
          key,
          hit,
          bodyRank: rank,
          bodyWeight: list.weight,
          fused: contribution,
          weightSum: list.weight,
          others: undefined,
          group,
          list: l,
          rank,
          more: undefined,
        };
        entries.set(key, created);
        arrived.push(created);
      } else {
        if (entry.group === group) continue; // one vote per engine
        entry.group = group;
        entry.fused += contribution;
        entry.weightSum += list.weight;
        // A literal of two: `[]` and a first push would reserve 17 slots.
        if (entry.more === undefined) entry.more = [l, rank];
        else entry.more.push(l, rank);
        absorb(entry, hit, rank, list.weight);
      }
    }
  }
  const ordered = bestEntries(arrived, options.k);
  const out: EngineHit[] = new Array(ordered.length);
  for (let i = 0; i < ordered.length; i++) out[i] = finalizeHit(toEntry(ordered[i]!, lists));
  return { hits: out, method: applied, notes, total: entries.size };
}

/**
 * One list under RRF with identity by id (passthrough to one engine): when its ids are distinct
 * and its fused scores fall strictly with rank, the fused order is the list's own, and what the
 * general path would build (a record per identity, the Map, the sort) is not needed. Undefined at
 * the first tie (a zero weight, an rrfK too large for ranks to differ): the general path orders
 * ties by id. test/unit/fusion-lone-list.test.ts holds the two to the same result.
 */
export function loneListInOwnOrder(list: RankedList, options: FusionOptions): FusionResult | undefined {
  if (list.distinctIds !== true) return undefined;
  const exclude = exclusionOf(options);
  const score = rrfScorer(options.rrfK);
  const lone = [list];
  const hits = list.hits;
  const out: EngineHit[] = [];
  let total = 0;
  let previous = Infinity;
  for (let i = 0; i < hits.length; i++) {
    const hit = hits[i]!;
    if (exclude?.has(dedupKey(hit, 'id', list.idSpace))) continue; // already served on an earlier page (§10)
    const rank = i + 1;
    const fused = score(list, rank, hit);
    if (!(fused < previous)) return undefined;
    previous = fused;
    total++;
    if (out.length < options.k) {
      // The record the general path would hold for a one-vote identity, finished the same way.
      const key = spacedId(hit.id, list.idSpace);
      const record: Accumulator = {
        key,
        hit,
        bodyRank: rank,
        bodyWeight: list.weight,
        fused,
        weightSum: list.weight,
        others: undefined,
        group: 0,
        list: 0,
        rank,
        more: undefined,
      };
      out.push(finalizeHit(toEntry(record, lone)));
    }
  }
  return { hits: out, method: 'rrf', notes: [], total };
}

/** The exclusion set to consult, or undefined when nothing is excluded (the first page). */
function exclusionOf(options: FusionOptions): ReadonlySet<string> | undefined {
  return options.exclude !== undefined && options.exclude.size > 0 ? options.exclude : undefined;
}

/** A fused identity while scoring: FusedEntry without the contribution objects. */
interface Accumulator extends Pick<FusedEntry, 'key' | 'hit' | 'bodyRank' | 'bodyWeight' | 'fused' | 'weightSum' | 'others'> {
  /** Engine group of the latest vote. */
  group: number;
  /** First vote: list index and 1-based rank. */
  list: number;
  rank: number;
  /** Later votes as (list index, rank) pairs. */
  more: number[] | undefined;
}

function contributionOf(lists: readonly RankedList[], l: number, rank: number): FusedEntry['contributions'][number] {
  const list = lists[l]!;
  return { engine: list.engine, rank, score: list.hits[rank - 1]!.score, weight: list.weight };
}

/** `lists` sorted by engine id: the array itself when it already is (no copy, no sort). */
function inEngineOrder(lists: readonly RankedList[]): readonly RankedList[] {
  for (let i = 1; i < lists.length; i++) {
    if (compareCodePoints(lists[i - 1]!.engine, lists[i]!.engine) > 0) {
      return [...lists].sort((a, b) => compareCodePoints(a.engine, b.engine));
    }
  }
  return lists;
}

function toEntry(acc: Accumulator, lists: readonly RankedList[]): FusedEntry {
  const more = acc.more;
  const contributions: FusedEntry['contributions'] = new Array(more === undefined ? 1 : 1 + more.length / 2);
  contributions[0] = contributionOf(lists, acc.list, acc.rank);
  if (more !== undefined) for (let j = 0; j < more.length; j += 2) contributions[1 + j / 2] = contributionOf(lists, more[j]!, more[j + 1]!);
  return {
    key: acc.key,
    hit: acc.hit,
    bodyRank: acc.bodyRank,
    bodyWeight: acc.bodyWeight,
    fused: acc.fused,
    weightSum: acc.weightSum,
    contributions,
    others: acc.others,
  };
}
