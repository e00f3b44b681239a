/**
 * Fusion of per-engine ranked lists (§16.3), pure. RRF is the default and always legal;
 * weighted (per-engine min-max) and convex (min anchored at the advertised `scoreFloor`) use
 * normalised scores. One scoring pass, then the best `k` in order (insertion into the best so far
 * for a page-sized `k`, a bounded heap when a larger `k` is a small share of the candidates, else
 * one sort).
 */
import { dedupKey, spacedId } from './dedup.js';
import { absorb, compareEntries, finalizeHit, type FusedEntry } from './merge.js';
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

/** Up to this `k` (a page), the best are kept by insertion (bestByInsertion) rather than a sort or a heap. */
const INSERTION_K = 32;

/**
 * The first `k` of `all` in §16.3 order, ties kept in arrival order exactly as the stable sort
 * would. For a page-sized k below n, insertion into the k best so far; for a larger k ≪ n, a
 * max-heap of the k best so far (root = the worst of them); either rejects most candidates with
 * one comparison instead of sorting all n.
 */
function bestEntries<T extends Pick<FusedEntry, 'fused' | 'weightSum' | 'hit'>>(all: T[], k: number): T[] {
  const n = all.length;
  if (k <= 0) return [];
  if (k < n && k <= INSERTION_K && Number.isInteger(k)) return bestByInsertion(all, k);
  if (k * 4 >= n) return all.sort(compareEntries).slice(0, k);
  // Heap of indices into `all`; the index breaks exact ties as arrival order.
  const worse = (a: number, b: number): boolean => {
    const c = compareEntries(all[a]!, all[b]!);
    return c > 0 || (c === 0 && a > b);
  };
  const heap: number[] = [];
  const siftUp = (at: number): void => {
    while (at > 0) {
      const parent = (at - 1) >> 1;
      if (!worse(heap[at]!, heap[parent]!)) return;
      [heap[at], heap[parent]] = [heap[parent]!, heap[at]!];
      at = parent;
    }
  };
  const siftDown = (at: number): void => {
    for (;;) {
      const left = at * 2 + 1;
      if (left >= heap.length) return;
      const right = left + 1;
      const child = right < heap.length && worse(heap[right]!, heap[left]!) ? right : left;
      if (!worse(heap[child]!, heap[at]!)) return;
      [heap[at], heap[child]] = [heap[child]!, heap[at]!];
      at = child;
    }
  };
  for (let i = 0; i < n; i++) {
    if (heap.length < k) {
      heap.push(i);
      siftUp(heap.length - 1);
    } else if (worse(heap[0]!, i)) {
      heap[0] = i;
      siftDown(0);
    }
  }
  heap.sort((a, b) => (worse(a, b) ? 1 : worse(b, a) ? -1 : 0));
  return heap.map((i) => all[i]!);
}

/**
 * The best `k` of `all` (k < all.length, k small), kept best first in an array of at most k.
 * Candidates arrive in order, so a candidate goes after every kept entry it does not strictly
 * beat: ties stay in arrival order, as in the stable sort. When k are kept, a candidate that does
 * not beat the worst of them is out after one comparison, and one that does pushes the worst out.
 * No comparator calls through the sort builtin (each boxes its number result) and no scratch
 * arrays: with three engines' pages this is the common case (docs/performance.md).
 */
function bestByInsertion<T extends Pick<FusedEntry, 'fused' | 'weightSum' | 'hit'>>(all: readonly T[], k: number): T[] {
  const top: T[] = [];
  for (let i = 0; i < all.length; i++) {
    const candidate = all[i]!;
    let at = top.length;
    if (at === k) {
      if (!(compareEntries(candidate, top[k - 1]!) < 0)) continue;
      at = k - 1; // the worst kept makes room
    } else {
      top.push(candidate);
    }
    while (at > 0 && compareEntries(candidate, top[at - 1]!) < 0) {
      top[at] = top[at - 1]!;
      at--;
    }
    top[at] = candidate;
  }
  return top;
}
