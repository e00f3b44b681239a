/**
 * The gateway's fused order against the reference RRF fusers (§16.3), on recorded lists: the
 * formula `Σ weight / (rrfK + rank)`, ties by summed weight, then the smaller stringified id in
 * **code-point order** — the UTF-8 byte order that Python's `sorted`, Rust's `Ord for String` and
 * C++'s `std::string` compare with. The reference below is written the way those fusers are
 * (a score map, then one sort on a key), independently of the gateway's heap and code-unit fixup;
 * the expected orders are also recorded literally, so a change to either side shows.
 */
import { describe, expect, it } from 'vitest';
import { fuse } from '../../src/core/federation/fusion/fuse.js';
import { compareCodePoints } from '../../src/core/federation/fusion/order.js';
import type { RankedList } from '../../src/core/federation/fusion/types.js';

/** A reference RRF (lists taken in the order given, as a reference fuser sums them). */
function referenceRrf(lists: readonly RankedList[], rrfK: number, k: number): Array<{ id: string; score: number }> {
  const score = new Map<string, number>();
  const weight = new Map<string, number>();
  for (const list of lists) {
    list.hits.forEach((hit, i) => {
      const id = String(hit.id);
      score.set(id, (score.get(id) ?? 0) + list.weight / (rrfK + i + 1));
      weight.set(id, (weight.get(id) ?? 0) + list.weight);
    });
  }
  const utf8 = (s: string): Buffer => Buffer.from(s, 'utf8');
  return [...score.keys()]
    .sort((x, y) => score.get(y)! - score.get(x)! || weight.get(y)! - weight.get(x)! || Buffer.compare(utf8(x), utf8(y)))
    .slice(0, k)
    .map((id) => ({ id, score: score.get(id)! }));
}

const hits = (...ids: Array<string | number>): RankedList['hits'] => ids.map((id, i) => ({ id, score: 10 - i }));

/** Recorded lists (engine-id order, as the gateway orders them) and the order every reference fuser gives. */
const RECORDED: Array<{ name: string; lists: RankedList[]; rrfK: number; expected: string[] }> = [
  {
    name: 'non-BMP ids tied at rank 1 (code points: U+FF5E before U+1F600; code units would swap them)',
    lists: [
      { engine: 'x', weight: 1, hits: hits('\u{1F600}', 'b', 'a') },
      { engine: 'y', weight: 1, hits: hits('\uFF5E', 'a', 'c') },
    ],
    rrfK: 60,
    expected: ['a', '\uFF5E', '\u{1F600}', 'b', 'c'],
  },
  {
    name: 'numeric ids compared as strings ("10" < "7"), weights breaking a score tie',
    lists: [
      { engine: 'p', weight: 2, hits: hits(7, 10, 3) },
      { engine: 'q', weight: 1, hits: hits(10, 'z') },
      { engine: 'r', weight: 1, hits: hits(3, 'y') },
    ],
    rrfK: 0,
    expected: ['10', '7', '3', 'y', 'z'],
  },
  {
    name: 'surrogate pair against a private-use character and ASCII, three engines',
    lists: [
      { engine: 'a', weight: 1, hits: hits('\uE000', 'm', '\u{10000}') },
      { engine: 'b', weight: 1, hits: hits('\u{10000}', 'n', '\uE000') },
      { engine: 'c', weight: 1, hits: hits('m', 'n', 'o') },
    ],
    rrfK: 60,
    expected: ['m', '\uE000', '\u{10000}', 'n', 'o'],
  },
];

describe('fused order identical to the reference RRF fusers', () => {
  it.each(RECORDED)('$name', ({ lists, rrfK, expected }) => {
    const reference = referenceRrf(lists, rrfK, Infinity);
    expect(reference.map((hit) => hit.id)).toEqual(expected);
    const gateway = fuse(lists, 'rrf', { k: Infinity, rrfK, dedup: 'id' }).hits;
    expect(gateway.map((hit) => String(hit.id))).toEqual(expected);
    // `score` is the fused RRF sum, the same number the reference computes.
    expect(gateway.map((hit) => hit.score)).toEqual(reference.map((hit) => hit.score));
  });

  it('is the same order whatever order the lists arrive in (the gateway sums in engine-id order)', () => {
    for (const { lists, rrfK, expected } of RECORDED) {
      expect(fuse([...lists].reverse(), 'rrf', { k: Infinity, rrfK, dedup: 'id' }).hits.map((hit) => String(hit.id))).toEqual(expected);
    }
  });
});

describe('what a fused hit says', () => {
  it('score = meta.fusedScore; meta.engine = best rank (then weight, then engine id); meta.engines = every contribution', () => {
    const [top] = fuse(
      [
        { engine: 'b', weight: 1, hits: hits('d', 'e') },
        { engine: 'a', weight: 1, hits: hits('e', 'd') },
      ],
      'rrf',
      { k: 1, rrfK: 60, dedup: 'id' },
    ).hits;
    // d and e tie (ranks 1 + 2 each), weights tie, so the smaller id leads; both engines rank it,
    // a at 2 and b at 1: meta.engine names the better rank.
    expect(top).toMatchObject({
      id: 'd',
      score: 1 / 61 + 1 / 62,
      meta: {
        engine: 'b',
        engineRank: 1,
        engineScore: 10,
        fusedScore: 1 / 61 + 1 / 62,
        engines: [
          { engine: 'a', rank: 2, score: 9 },
          { engine: 'b', rank: 1, score: 10 },
        ],
      },
    });
  });
});

describe('code-point order', () => {
  it('agrees with UTF-8 byte order where code-unit order does not', () => {
    const words = ['\uFF5E', '\u{1F600}', '\uE000', '\u{10000}', 'a', '', 'ab', '\uD7FF', '\u{10FFFF}'];
    const byBytes = [...words].sort((x, y) => Buffer.compare(Buffer.from(x, 'utf8'), Buffer.from(y, 'utf8')));
    expect([...words].sort(compareCodePoints)).toEqual(byBytes);
    expect([...words].sort()).not.toEqual(byBytes); // JavaScript's default (code units) differs
  });
});
