/**
 * Federated pagination over fused results (§10), pure apart from the injected fetch.
 *
 * The fused order must be the same on every page although each page is computed from scratch
 * (no server-side state). So the result set is cut into window *segments* fixed by the first
 * page: with per-engine window depth W_e (the first page's per-engine `k`), segment s fuses each
 * engine's ranks [0, W_e·2^s) and keeps only the hits that appear in no engine's ranks
 * [0, W_e·2^(s-1)), in fused order. Segment 0 is exactly the first page's fusion; every later
 * segment holds only hits no earlier segment contained. Depths double per segment so that a
 * deep result set takes few segments (each page re-reads the engines from rank 0). A page is `k` consecutive hits of the
 * concatenation seg0 ‖ seg1 ‖ …, addressed by (segment, offset) in the cursor. Given engines
 * that answer the same query the same way, no hit is ever served twice and none is skipped:
 * by induction, once segments 0..s-1 are paged through, exactly the hits in the engines'
 * ranks [0, W·2^(s-1)) have been served, which is what segment s excludes.
 */
import { dedupKey } from './fusion/dedup.js';
import { fuse } from './fusion/fuse.js';
import type { EngineHit, FusionMethod, FusionOptions, RankedList } from './fusion/types.js';

export interface SegmentFetch {
  /** Each engine's ranked list to at least depth `segmentDepth(W_e, segment)` (fewer when it has no more). */
  lists: RankedList[];
  /** Engines that can return hits beyond what `lists` holds for them. */
  deeper: ReadonlySet<string>;
  /** Notes from fusion (e.g. a convex → rrf fallback). */
  notes?: string[];
}

export interface PageOptions {
  k: number;
  method: FusionMethod;
  fusion: Omit<FusionOptions, 'k' | 'exclude'>;
  depth: Readonly<Record<string, number>>;
  /** Fetch rounds allowed for one page before a short page is returned (it still has a cursor). */
  maxRounds: number;
}

export interface PageResult {
  hits: EngineHit[];
  /** Where the next page starts; undefined when the result set is exhausted. */
  next: { segment: number; offset: number } | undefined;
  method: FusionMethod;
  notes: string[];
}

/** Per-engine depth that segment `segment` covers: W·2^segment. */
export function segmentDepth(window: number, segment: number): number {
  return window * 2 ** segment;
}

function truncate(lists: readonly RankedList[], depth: Readonly<Record<string, number>>, segment: number): readonly RankedList[] {
  let out: RankedList[] | undefined;
  for (let i = 0; i < lists.length; i++) {
    const list = lists[i]!;
    const cut = segmentDepth(depth[list.engine] ?? 0, segment);
    // A list no deeper than the segment is used as it is (the first page, usually): fusion only
    // reads its lists, so no copy is needed.
    if (out === undefined && list.hits.length <= cut) continue;
    out ??= lists.slice(0, i);
    // A prefix of distinct ids is distinct: the `distinctIds` mark the spread carries stays true.
    out.push(list.hits.length <= cut ? list : { ...list, hits: list.hits.slice(0, cut) });
  }
  return out ?? lists;
}

/**
 * The new hits of segment `segment`, in fused order (see the module comment): the first `limit`
 * of them, and how many there are in all.
 */
export function segmentHits(
  lists: readonly RankedList[],
  segment: number,
  options: Omit<PageOptions, 'maxRounds' | 'k'>,
  limit = Infinity,
): { hits: EngineHit[]; total: number; method: FusionMethod; notes: string[] } {
  // Segment 0 excludes nothing (fuse takes no set as an empty one).
  let exclude: Set<string> | undefined;
  if (segment > 0) {
    exclude = new Set<string>();
    for (const list of truncate(lists, options.depth, segment - 1)) {
      for (const hit of list.hits) exclude.add(dedupKey(hit, options.fusion.dedup, list.idSpace));
    }
  }
  const { rrfK, dedup } = options.fusion;
  return fuse(truncate(lists, options.depth, segment), options.method, { rrfK, dedup, k: limit, exclude });
}

/**
 * One page starting at `start`: fetches segment `start.segment` (and further segments while the
 * page is not full and some engine has more), then cuts `k` hits. Synchronous while `fetch` is:
 * a first page whose engines already answered deep enough (the common case) costs no promise.
 */
export function fusedPage(
  start: { segment: number; offset: number },
  options: PageOptions,
  fetch: (segment: number) => SegmentFetch | Promise<SegmentFetch>,
): PageResult | Promise<PageResult> {
  return advance(new PageCut(start, options), fetch);
}

/** Fetch and cut segment after segment until the page is done, waiting only for a fetch that has to. */
function advance(cut: PageCut, fetch: (segment: number) => SegmentFetch | Promise<SegmentFetch>): PageResult | Promise<PageResult> {
  for (;;) {
    const fetched = fetch(cut.segment);
    if (fetched instanceof Promise) return fetched.then((later) => cut.take(later) ?? advance(cut, fetch));
    const done = cut.take(fetched);
    if (done) return done;
  }
}

/** The page being cut: the hits taken so far and where the next segment starts. */
class PageCut {
  private readonly hits: EngineHit[] = [];
  private readonly notes: string[] = [];
  segment: number;
  private offset: number;
  private method: FusionMethod;
  private round = 1;

  constructor(
    start: { segment: number; offset: number },
    private readonly options: PageOptions,
  ) {
    this.segment = start.segment;
    this.offset = start.offset;
    this.method = options.method;
  }

  /** Cut what this segment gives; the page when it is done, undefined when the next segment is needed. */
  take(fetched: SegmentFetch): PageResult | undefined {
    const { hits, notes, options } = this;
    const wanted = options.k - hits.length;
    const seg = segmentHits(fetched.lists, this.segment, options, this.offset + wanted);
    this.method = seg.method;
    if (fetched.notes !== undefined) addNew(notes, fetched.notes);
    addNew(notes, seg.notes);
    const end = Math.min(seg.hits.length, this.offset + wanted);
    for (let i = this.offset; i < end; i++) hits.push(seg.hits[i]!);
    this.offset = Math.max(this.offset, end);
    if (this.offset < seg.total) return this.page({ segment: this.segment, offset: this.offset });
    // This segment is used up: the result set ends unless some engine can go deeper.
    const more = fetched.lists.some((list) => fetched.deeper.has(list.engine));
    if (!more) return this.page(undefined);
    this.segment += 1;
    this.offset = 0;
    if (hits.length >= options.k || this.round >= options.maxRounds) return this.page({ segment: this.segment, offset: this.offset });
    this.round += 1;
    return undefined;
  }

  private page(next: PageResult['next']): PageResult {
    return { hits: this.hits, next, method: this.method, notes: this.notes };
  }
}

/** `notes` with each of `more` it does not have yet, in order. */
function addNew(notes: string[], more: readonly string[]): void {
  for (let i = 0; i < more.length; i++) if (!notes.includes(more[i]!)) notes.push(more[i]!);
}
