/**
 * The paired statistics bench/compare.js reports (bench/lib/paired.js): per-round ratios, their
 * median, and the two-sided sign test, checked against values worked out by hand.
 */
import { describe, expect, it } from 'vitest';
import { describePaired, median, pairedRatio, signTestP } from '../../bench/lib/paired.js';

describe('paired benchmark statistics', () => {
  it('gives the two-sided sign test of a split', () => {
    expect(signTestP(0, 0)).toBe(1);
    expect(signTestP(8, 8)).toBe(1);
    // 14 of 16 lower: 2 × (1 + 16 + 120) / 2^16
    expect(signTestP(14, 2)).toBeCloseTo((2 * 137) / 65_536, 12);
    expect(signTestP(2, 14)).toBeCloseTo((2 * 137) / 65_536, 12);
    // 3 of 3: 2 / 8
    expect(signTestP(3, 0)).toBeCloseTo(0.25, 12);
  });

  it('pairs rounds: the median of per-round ratios, not the ratio of medians', () => {
    // The host halves its speed in round 3 for both; the per-round ratio stays 0.9.
    const reference = [100, 100, 200, 100, 100];
    const variant = [90, 90, 180, 90, 95];
    const paired = pairedRatio(variant, reference);
    expect(paired).toEqual({ median: 0.9, lower: 5, higher: 0, rounds: 5, p: 0.0625 });
    expect(describePaired(paired)).toBe('0.900, lower in 5 of 5 rounds (sign test p = 0.063)');
    expect(median([3, 1, 2])).toBe(2);
  });

  it('leaves equal rounds out of the sign test and refuses unmatched rounds', () => {
    expect(pairedRatio([1, 2, 3], [1, 2, 4])).toMatchObject({ lower: 1, higher: 0, p: 1 });
    expect(() => pairedRatio([1], [1, 2])).toThrow(/match/);
    expect(() => pairedRatio([], [])).toThrow(/empty/);
  });
});
