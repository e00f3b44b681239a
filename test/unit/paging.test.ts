/**
 * Federated pagination order (§10, src/federation/paging.ts): pages cut from the window segments
 * never repeat or skip a hit, and the pages covering the first window are exactly the top of one
 * big fusion of that window.
 */
import { describe, expect, it } from 'vitest';
import { fuse } from '../../src/core/federation/fusion/fuse.js';
import type { EngineHit, FusionMethod, RankedList } from '../../src/core/federation/fusion/types.js';
import { fusedPage, segmentHits, type SegmentFetch } from '../../src/core/federation/paging.js';

/** A deterministic engine: `n` docs drawn from a shared pool, ranked by a per-engine hash. */
function engineList(engine: string, n: number, pool: number, salt: number, floor?: number): RankedList {
  const docs = Array.from({ length: pool }, (_, i) => `d${i}`)
    .map((id) => ({ id, h: hash(`${salt}:${id}`) }))
    .sort((a, b) => a.h - b.h)
    .slice(0, n);
  const hits: EngineHit[] = docs.map((d, i) => ({
    id: d.id,
    score: (n - i) / n + 0.1,
    text: `body of ${d.id}`,
    citation: { source: engine, uri: `u:${d.id}` },
  }));
  return { engine, weight: 1, hits, ...(floor !== undefined ? { scoreFloor: floor } : {}) };
}

function hash(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

/** A fetch that serves every engine's list to the requested depth (as a real engine would). */
function fetcher(
  full: readonly RankedList[],
  depth: Record<string, number>,
  maxDepth = Infinity,
): (segment: number) => Promise<SegmentFetch> {
  const now = syncFetcher(full, depth, maxDepth);
  return (segment) => Promise.resolve(now(segment));
}

/** The same lists at once, as the gateway has them when no engine needs reading deeper. */
function syncFetcher(full: readonly RankedList[], depth: Record<string, number>, maxDepth = Infinity): (segment: number) => SegmentFetch {
  return (segment) => {
    const lists = full.map((list) => {
      const d = Math.min(depth[list.engine]! * 2 ** segment, maxDepth);
      return { ...list, hits: list.hits.slice(0, d) };
    });
    const deeper = new Set(lists.filter((l, i) => l.hits.length < full[i]!.hits.length && l.hits.length < maxDepth).map((l) => l.engine));
    return { lists, deeper };
  };
}

async function pageAll(
  full: readonly RankedList[],
  k: number,
  method: FusionMethod,
  dedup: 'id' | 'citation.uri' = 'id',
  maxDepth = Infinity,
): Promise<{ pages: EngineHit[][]; depth: Record<string, number> }> {
  const depth = Object.fromEntries(full.map((l) => [l.engine, k * 2]));
  const fetch = fetcher(full, depth, maxDepth);
  const pages: EngineHit[][] = [];
  let start: { segment: number; offset: number } | undefined = { segment: 0, offset: 0 };
  while (start && pages.length < 1_000) {
    const page = await fusedPage(start, { k, method, depth, maxRounds: 12, fusion: { rrfK: 60, dedup } }, fetch);
    expect(page.hits.length).toBeLessThanOrEqual(k);
    pages.push(page.hits);
    start = page.next;
  }
  return { pages, depth };
}

describe('federated pagination over window segments', () => {
  const full = [engineList('a', 60, 120, 1), engineList('b', 45, 120, 2), engineList('c', 30, 120, 3)];

  it('a fetch that answers at once gets its page at once, the same page as an async fetch', async () => {
    const k = 7;
    const depth = Object.fromEntries(full.map((l) => [l.engine, k * 2]));
    const options = { k, method: 'rrf' as const, depth, maxRounds: 12, fusion: { rrfK: 60, dedup: 'id' as const } };
    const now = syncFetcher(full, depth);
    const later = fetcher(full, depth);
    // Segment 0 at once, later segments only after a wait: a page that crosses into them waits.
    const mixed = (segment: number): SegmentFetch | Promise<SegmentFetch> => (segment === 0 ? now(segment) : later(segment));
    const { pages } = await pageAll(full, k, 'rrf');
    let start: { segment: number; offset: number } | undefined = { segment: 0, offset: 0 };
    let crossed = false;
    for (const expected of pages) {
      const sync = fusedPage(start!, options, now);
      expect(sync).not.toBeInstanceOf(Promise);
      const page = sync as Exclude<typeof sync, Promise<unknown>>;
      expect(page.hits).toEqual(expected);
      const viaMixed = fusedPage(start!, options, mixed);
      if (viaMixed instanceof Promise) crossed = true;
      expect(await viaMixed).toEqual(page);
      start = page.next;
    }
    expect(start).toBeUndefined();
    expect(crossed).toBe(true);
  });

  for (const method of ['rrf', 'weighted'] as const) {
    it(`${method}: paging serves every hit exactly once (no repeats, no gaps)`, async () => {
      const { pages } = await pageAll(full, 7, method);
      const served = pages.flat().map((h) => String(h.id));
      expect(new Set(served).size).toBe(served.length);
      const everything = new Set(full.flatMap((l) => l.hits.map((h) => String(h.id))));
      expect(new Set(served)).toEqual(everything);
      // Only the last page may be short or empty.
      for (const page of pages.slice(0, -1)) expect(page.length).toBe(7);
    });
  }

  it('the pages covering the first window are exactly the top of one big fusion of that window', async () => {
    const k = 5;
    const { pages, depth } = await pageAll(full, k, 'rrf');
    const window = full.map((l) => ({ ...l, hits: l.hits.slice(0, depth[l.engine]) }));
    const big = fuse(window, 'rrf', { k: Infinity, rrfK: 60, dedup: 'id' }).hits.map((h) => h.id);
    const concatenated = pages.flat().map((h) => h.id);
    expect(big.length).toBeGreaterThan(3 * k);
    expect(concatenated.slice(0, big.length)).toEqual(big);
    // The first page is the plain fusion's top k (what a request without pagination gets).
    expect(pages[0]!.map((h) => h.id)).toEqual(fuse(window, 'rrf', { k, rrfK: 60, dedup: 'id' }).hits.map((h) => h.id));
  });

  it('a later segment holds only hits no earlier segment contained', () => {
    const depth = { a: 4, b: 4, c: 4 };
    const options = { method: 'rrf' as const, depth, fusion: { rrfK: 60, dedup: 'id' as const } };
    const seen = new Set<string>();
    for (let s = 0; s < 5; s++) {
      for (const hit of segmentHits(full, s, options).hits) {
        expect(seen.has(String(hit.id))).toBe(false);
        seen.add(String(hit.id));
      }
    }
    expect(seen.size).toBe(new Set(full.flatMap((l) => l.hits.slice(0, 4 * 16).map((h) => String(h.id)))).size);
  });

  it('dedups across engines by citation.uri when asked, still without repeats', async () => {
    const shared: RankedList[] = [
      engineList('x', 20, 30, 7),
      { ...engineList('y', 20, 30, 8), hits: engineList('y', 20, 30, 8).hits.map((h) => ({ ...h, id: `y-${String(h.id)}` })) },
    ];
    const { pages } = await pageAll(shared, 4, 'rrf', 'citation.uri');
    const uris = pages.flat().map((h) => (h.citation as { uri: string }).uri);
    expect(new Set(uris).size).toBe(uris.length);
    expect(new Set(uris)).toEqual(new Set(shared.flatMap((l) => l.hits.map((h) => (h.citation as { uri: string }).uri))));
  });

  it('ends the result set at the maximum depth', async () => {
    const { pages } = await pageAll(full, 5, 'rrf', 'id', 20);
    const served = pages.flat().map((h) => String(h.id));
    expect(new Set(served).size).toBe(served.length);
    expect(new Set(served)).toEqual(new Set(full.flatMap((l) => l.hits.slice(0, 20).map((h) => String(h.id)))));
  });

  it('convex without floors falls back to rrf and says so on every page', async () => {
    const depth = { a: 6, b: 6, c: 6 };
    const page = await fusedPage(
      { segment: 0, offset: 0 },
      { k: 3, method: 'convex', depth, maxRounds: 4, fusion: { rrfK: 60, dedup: 'id' } },
      fetcher(full, depth),
    );
    expect(page.method).toBe('rrf');
    expect(page.notes.some((n) => n.includes('fell back to rrf'))).toBe(true);
    const floored = full.map((l) => ({ ...l, scoreFloor: 0 }));
    const convex = await fusedPage(
      { segment: 0, offset: 0 },
      { k: 3, method: 'convex', depth, maxRounds: 4, fusion: { rrfK: 60, dedup: 'id' } },
      fetcher(floored, depth),
    );
    expect(convex.method).toBe('convex');
    expect(convex.notes).toEqual([]);
  });
});
