/**
 * Fusion picks its best `k` three ways (fuse.ts `bestEntries`): insertion into the k best for a
 * page-sized k, a heap for a larger k much smaller than the candidates, one stable sort
 * otherwise. Whatever the way, the result must be the first `k` of the whole fused order (the
 * sort's, with `k = Infinity`): same hits, scores, tags and key order, ties kept in arrival order.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { fuse } from '../../src/core/federation/fusion/fuse.js';
import type { EngineHit, FusionMethod, RankedList } from '../../src/core/federation/fusion/types.js';

/** Keys of every object in the value, in order (toEqual ignores key order). */
function keysOf(value: unknown, out: string[][] = []): string[][] {
  if (value && typeof value === 'object') {
    if (!Array.isArray(value)) out.push(Object.keys(value));
    for (const child of Object.values(value)) keysOf(child, out);
  }
  return out;
}

// Few ids, few scores and weights: ties at every level of the §16.3 order are the point. Lists (and some ids from a wider range, for
// the heap's many candidates) are long (`size: 'max'`) so that the candidates outnumber every k tried.
const hitArb: fc.Arbitrary<EngineHit> = fc
  .record(
    {
      id: fc.oneof(fc.nat({ max: 30 }), fc.nat({ max: 400 }), fc.constantFrom('a', 'b', '1', '\u{1F600}', '\uFF5E', 'doc-1')),
      score: fc.constantFrom(0, 1, 2, 2.5, 7),
      meta: fc.record({ lang: fc.constantFrom('en', 'fr') }),
    },
    { requiredKeys: ['id', 'score'] },
  )
  .map((hit) => hit as EngineHit);

const listsArb: fc.Arbitrary<RankedList[]> = fc.array(
  fc.record({
    engine: fc.constantFrom('e0', 'e1', 'e2', 'e3'),
    weight: fc.constantFrom(1, 2, 0.5, 0),
    hits: fc.array(hitArb, { maxLength: 60, size: 'max' }),
    scoreFloor: fc.constantFrom(0, 1),
    // Id spaces make identities whose stringified ids are equal: exact ties, broken by arrival order.
    idSpace: fc.constantFrom('s1', 's2'),
  }),
  { minLength: 1, maxLength: 4 },
);

/**
 * One list repeated in three id spaces: ~170 identities, each tied exactly with its twins (same
 * fused score, weight and stringified id), so arrival order decides, in the heap's range too.
 */
const twinsArb: fc.Arbitrary<RankedList[]> = fc.uniqueArray(fc.nat({ max: 1_000 }), { minLength: 45, maxLength: 60 }).map((ids) => {
  const hits: EngineHit[] = ids.map((id, i) => ({ id, score: 60 - i }));
  return ['s1', 's2', 's3'].map((idSpace, e) => ({ engine: `e${e}`, weight: 1, hits, scoreFloor: 0, idSpace }));
});

const method = fc.constantFrom<FusionMethod>('rrf', 'weighted', 'convex');

describe('fusion’s choice of the best k', () => {
  it('is the first k of the whole fused order, for every k and every way of choosing', () => {
    fc.assert(
      fc.property(fc.oneof(listsArb, twinsArb), method, fc.constantFrom(0, 1, 60), (lists, fusion, rrfK) => {
        const all = fuse(lists, fusion, { k: Infinity, rrfK, dedup: 'id' });
        // Insertion (k ≤ 32 and below the candidates), the heap (k > 32, k × 4 < candidates), the sort.
        for (const k of [1, 2, 3, 10, 31, 32, 33, 40, all.total - 1, all.total, all.total + 1]) {
          if (k < 0) continue;
          const some = fuse(lists, fusion, { k, rrfK, dedup: 'id' });
          expect(some.hits).toEqual(all.hits.slice(0, k));
          expect(keysOf(some.hits)).toEqual(keysOf(all.hits.slice(0, k)));
          expect(some.total).toBe(all.total);
        }
      }),
      { numRuns: 400 },
    );
  });

  it('keeps tied hits in arrival order when the page is full', () => {
    // Every hit scores the same (one list, weight 0): the order is by stringified id alone.
    const hits: EngineHit[] = ['d', 'b', 'e', 'a', 'c'].map((id) => ({ id, score: 1 }));
    const out = fuse([{ engine: 'e0', weight: 0, hits }], 'rrf', { k: 3, rrfK: 60, dedup: 'id' });
    expect(out.hits.map((hit) => hit.id)).toEqual(['a', 'b', 'c']);
    expect(out.total).toBe(5);
  });
});
