/**
 * A lone list under RRF with identity by id (passthrough to one engine) is fused in its own
 * order when its ids are known distinct, without the general path's records, Map and sort. Its
 * result must be the general path's exactly (hits, scores, origin tags, key order, `total`), for
 * any list, weight, rrfK, k and exclusion set; on a tie it must step aside.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { dedupKey } from '../../src/core/federation/fusion/dedup.js';
import { fuse, loneListInOwnOrder } from '../../src/core/federation/fusion/fuse.js';
import type { EngineHit, FusionOptions, RankedList } from '../../src/core/federation/fusion/types.js';

/** Keys of every object in the value, in order (toEqual ignores key order). */
function keysOf(value: unknown, out: string[][] = []): string[][] {
  if (value && typeof value === 'object') {
    if (!Array.isArray(value)) out.push(Object.keys(value));
    for (const child of Object.values(value)) keysOf(child, out);
  }
  return out;
}

/** The general path: the same list without the distinct-ids mark. */
function general(list: RankedList, options: FusionOptions): ReturnType<typeof fuse> {
  const { distinctIds: _mark, ...unmarked } = list;
  return fuse([unmarked], 'rrf', options);
}

function expectSame(list: RankedList, options: FusionOptions): void {
  const fast = fuse([list], 'rrf', options);
  const slow = general(list, options);
  expect(fast).toEqual(slow);
  expect(keysOf(fast)).toEqual(keysOf(slow));
}

const hitArb = (id: string | number): fc.Arbitrary<EngineHit> =>
  fc
    .record(
      {
        score: fc.double({ noNaN: true, noDefaultInfinity: true }),
        text: fc.string({ maxLength: 5 }),
        meta: fc.record({ lang: fc.constantFrom('en', 'fr'), engine: fc.constant('spoofed') }, { requiredKeys: [] }),
        citation: fc.record({ uri: fc.webUrl() }),
      },
      { requiredKeys: ['score'] },
    )
    .map((fields) => ({ id, ...fields }));

/** Distinct stringified ids, numbers and strings mixed (`1` and `'1'` never both). */
const idsArb = fc.uniqueArray(fc.oneof(fc.nat({ max: 50 }), fc.string({ maxLength: 3 })), {
  maxLength: 30,
  selector: (id) => String(id),
});

const caseArb = fc
  .record({
    ids: idsArb,
    // NaN and Infinity are refused by the config; drawn so that the two paths are compared on them too.
    weight: fc.oneof(fc.constantFrom(1, 2, 0.5, 0, -1, NaN, Infinity), fc.double({ min: 0, max: 10, noNaN: true })),
    rrfK: fc.oneof(fc.constantFrom(0, 1, 60, 1e17, 1e300, NaN), fc.double({ min: 0, max: 1000, noNaN: true })),
    k: fc.oneof(fc.constantFrom(0, 1, 10, Infinity), fc.nat({ max: 40 })),
    idSpace: fc.option(fc.constantFrom('corpus-a', ''), { nil: undefined }),
    excludeEvery: fc.nat({ max: 4 }),
  })
  .chain(({ ids, ...rest }) => fc.tuple(fc.tuple(...ids.map(hitArb)), fc.constant(rest)));

describe('fusion of a lone list in its own order', () => {
  it('gives the general path’s result for any list, weight, rrfK, k and exclusion', () => {
    fc.assert(
      fc.property(caseArb, ([hits, { weight, rrfK, k, idSpace, excludeEvery }]) => {
        const list: RankedList = { engine: 'e0', weight, hits, distinctIds: true, ...(idSpace !== undefined ? { idSpace } : {}) };
        const exclude = new Set(
          hits.filter((_, i) => excludeEvery > 0 && i % excludeEvery === 0).map((hit) => dedupKey(hit, 'id', idSpace)),
        );
        expectSame(list, { k, rrfK, dedup: 'id', exclude });
      }),
      { numRuns: 1_500 },
    );
  });

  it('takes the usual passthrough list itself, and steps aside on a tie', () => {
    const hits: EngineHit[] = Array.from({ length: 20 }, (_, i) => ({ id: `doc-${i}`, score: 20 - i, text: `t${i}` }));
    const options: FusionOptions = { k: 10, rrfK: 60, dedup: 'id' };
    const own = loneListInOwnOrder({ engine: 'e0', weight: 1, hits, distinctIds: true }, options);
    expect(own?.hits.map((hit) => hit.id)).toEqual(hits.slice(0, 10).map((hit) => hit.id));
    expect(own?.total).toBe(20);
    expectSame({ engine: 'e0', weight: 1, hits, distinctIds: true }, options);
    // A zero weight makes every fused score 0: the general path orders by id, so the lone-list path must not answer.
    expect(loneListInOwnOrder({ engine: 'e0', weight: 0, hits, distinctIds: true }, options)).toBeUndefined();
    // So must an rrfK too large for ranks to differ.
    expect(loneListInOwnOrder({ engine: 'e0', weight: 1, hits, distinctIds: true }, { ...options, rrfK: 1e300 })).toBeUndefined();
    // And a list not known to have distinct ids.
    expect(loneListInOwnOrder({ engine: 'e0', weight: 1, hits }, options)).toBeUndefined();
  });

  it('leaves a list with a repeated id to the general path, which keeps the first', () => {
    const hits: EngineHit[] = [
      { id: 'a', score: 3 },
      { id: 'b', score: 2 },
      { id: 'a', score: 1 },
    ];
    const out = fuse([{ engine: 'e0', weight: 1, hits }], 'rrf', { k: 10, rrfK: 60, dedup: 'id' });
    expect(out.hits.map((hit) => hit.id)).toEqual(['a', 'b']);
    expect(out.total).toBe(2);
  });
});
