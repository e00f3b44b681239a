import { describe, expect, it } from 'vitest';
import { comparePair, kendallTauShared, overlapAtK, rankBiasedOverlap } from '../../src/core/experiments/compare.js';

/** RBO_ext by the definition (Webber et al. 2010, eq. 32), written out term by term. */
function rboReference(s: string[], l: string[], p: number): number {
  const X = (d: number): number => new Set(s.slice(0, Math.min(d, s.length)).filter((x) => l.slice(0, d).includes(x))).size;
  const sl = s.length;
  const ll = l.length;
  let sum = 0;
  for (let d = 1; d <= ll; d++) sum += (X(d) / d) * p ** d;
  for (let d = sl + 1; d <= ll; d++) sum += ((X(sl) * (d - sl)) / (sl * d)) * p ** d;
  return ((1 - p) / p) * sum + ((X(ll) - X(sl)) / ll + X(sl) / sl) * p ** ll;
}

describe('overlap@k', () => {
  it('is the shared share of the two top-k sets', () => {
    expect(overlapAtK(['a', 'b', 'c'], ['c', 'x', 'a'], 3)).toBeCloseTo(2 / 3, 12);
    expect(overlapAtK(['a', 'b', 'c'], ['c', 'x', 'a'], 1)).toBe(0);
    expect(overlapAtK(['a'], ['a'], 10)).toBeCloseTo(0.1, 12); // short lists count against k
    expect(() => overlapAtK([], [], 0)).toThrow(RangeError);
  });
});

describe('rank-biased overlap (extrapolated)', () => {
  it('is 1 for identical lists and 0 for disjoint ones, at any depth', () => {
    for (const n of [1, 3, 10, 50]) {
      const list = Array.from({ length: n }, (_, i) => `d${i}`);
      expect(rankBiasedOverlap(list, [...list])).toBeCloseTo(1, 12);
      expect(
        rankBiasedOverlap(
          list,
          list.map((x) => `other-${x}`),
        ),
      ).toBe(0);
    }
    expect(rankBiasedOverlap([], [])).toBe(1);
    expect(rankBiasedOverlap(['a'], [])).toBe(0);
  });

  it('matches eq. 32 term by term for even and uneven lists', () => {
    const cases: Array<[string[], string[]]> = [
      [
        ['a', 'b', 'c', 'd'],
        ['b', 'a', 'd', 'c'],
      ],
      [
        ['a', 'b'],
        ['a', 'b', 'c', 'd'],
      ],
      [
        ['a', 'x', 'c'],
        ['c', 'b', 'a', 'y', 'z', 'q'],
      ],
      [
        ['a', 'b', 'c', 'd', 'e'],
        ['e', 'd', 'c', 'b', 'a'],
      ],
    ];
    for (const [s, l] of cases) {
      expect(rankBiasedOverlap(s, l, 0.9)).toBeCloseTo(rboReference(s, l, 0.9), 12);
      expect(rankBiasedOverlap(l, s, 0.9)).toBeCloseTo(rboReference(s, l, 0.9), 12); // symmetric
      expect(rankBiasedOverlap(s, l, 0.5)).toBeCloseTo(rboReference(s, l, 0.5), 12);
    }
  });

  it('weights the top: a swap at rank 1 costs more than one at rank 9', () => {
    const base = Array.from({ length: 10 }, (_, i) => `d${i}`);
    const topSwap = ['d1', 'd0', ...base.slice(2)];
    const deepSwap = [...base.slice(0, 8), 'd9', 'd8'];
    expect(rankBiasedOverlap(base, topSwap)).toBeLessThan(rankBiasedOverlap(base, deepSwap));
  });
});

describe("Kendall's tau on shared hits", () => {
  it('is 1 for the same order, -1 for the reverse, ignoring unshared ids', () => {
    expect(kendallTauShared(['a', 'x', 'b', 'c'], ['a', 'b', 'y', 'c'])).toBe(1);
    expect(kendallTauShared(['a', 'b', 'c'], ['c', 'b', 'a'])).toBe(-1);
    // shared a, b, c; B order c, a, b → pairs (a,b) concordant, (a,c) and (b,c) discordant
    expect(kendallTauShared(['a', 'b', 'c'], ['c', 'a', 'b'])).toBeCloseTo(-1 / 3, 12);
    expect(kendallTauShared(['a', 'b'], ['a', 'z'])).toBeUndefined();
  });
});

describe('shadow pair comparison', () => {
  it('reports ranking agreement, latency difference and error/empty states', () => {
    const both = comparePair({ ids: ['a', 'b', 'c'], latencyMs: 40 }, { ids: ['a', 'c', 'd'], latencyMs: 55 }, 3);
    expect(both.overlapAtK).toBeCloseTo(2 / 3, 12);
    expect(both.kendallTau).toBe(1);
    expect(both.rbo).toBeGreaterThan(0);
    expect(both.latencyDeltaMs).toBe(15);
    const failed = comparePair({ ids: ['a'], latencyMs: 10 }, { ids: [], latencyMs: 2_000, error: 'timeout' }, 3);
    expect(failed).toMatchObject({
      overlapAtK: undefined,
      rbo: undefined,
      shadowError: true,
      primaryError: false,
      shadowEmpty: false,
      primaryEmpty: false,
    });
    expect(comparePair({ ids: [], latencyMs: 1 }, { ids: ['a'], latencyMs: 1 }, 3)).toMatchObject({ primaryEmpty: true, rbo: 0 });
  });
});
