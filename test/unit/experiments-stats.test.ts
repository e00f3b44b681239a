import { describe, expect, it } from 'vitest';
import {
  binomialCdf,
  incompleteBeta,
  logGamma,
  pairedTTest,
  preferenceSummary,
  randomisationTest,
  signTest,
  studentTCdf,
  wilsonInterval,
} from '../../src/core/experiments/stats.js';
import { seededRandom } from '../../src/core/experiments/random.js';

/** Exact binomial CDF at p = ½ with big integers. */
function exactHalfCdf(k: number, n: number): number {
  let sum = 0n;
  let c = 1n;
  for (let i = 0; i <= k; i++) {
    sum += c;
    c = (c * BigInt(n - i)) / BigInt(i + 1);
  }
  return Number((sum * 10n ** 18n) / 2n ** BigInt(n)) / 1e18;
}

describe('special functions', () => {
  it('ln Γ matches factorials', () => {
    expect(logGamma(1)).toBeCloseTo(0, 12);
    expect(logGamma(5)).toBeCloseTo(Math.log(24), 12);
    expect(logGamma(0.5)).toBeCloseTo(Math.log(Math.sqrt(Math.PI)), 12);
    expect(logGamma(101)).toBeCloseTo(363.73937555556347, 9);
  });

  it('I_x(a, b) has its closed forms', () => {
    expect(incompleteBeta(0.3, 1, 1)).toBeCloseTo(0.3, 14);
    expect(incompleteBeta(0.3, 2, 1)).toBeCloseTo(0.09, 14); // x^a for b = 1
    expect(incompleteBeta(0.3, 1, 3)).toBeCloseTo(1 - 0.7 ** 3, 14);
    expect(() => incompleteBeta(1.5, 1, 1)).toThrow(RangeError);
  });

  it("Student's t CDF matches reference values (R pt / @stdlib)", () => {
    const reference: Array<[number, number, number]> = [
      [2, 10, 0.9633059826146297],
      [-1.5, 3, 0.1152919326224115],
      [0.3, 224, 0.6177723163084503],
      [4.2, 224, 0.9999807327853072],
      [-8, 5, 0.0002464533302862221],
      [2.5, 1.5, 0.915096748692652],
    ];
    for (const [t, df, p] of reference) expect(studentTCdf(t, df)).toBeCloseTo(p, 12);
    expect(studentTCdf(0, 7)).toBeCloseTo(0.5, 14);
    expect(studentTCdf(Infinity, 3)).toBe(1);
  });

  it('binomial CDF matches exact sums', () => {
    for (const [k, n] of [
      [3, 10],
      [40, 100],
      [90, 225],
      [0, 20],
      [499, 1000],
      [7, 15],
    ] as const) {
      expect(binomialCdf(k, n, 0.5)).toBeCloseTo(exactHalfCdf(k, n), 12);
    }
    expect(binomialCdf(-1, 5, 0.5)).toBe(0);
    expect(binomialCdf(5, 5, 0.5)).toBe(1);
  });
});

describe('sign test and preference', () => {
  it('is two-sided and exact', () => {
    expect(signTest(60, 40).pValue).toBeCloseTo(0.056887933640981, 12); // R: binom.test(60, 100)$p.value
    expect(signTest(8, 2).pValue).toBeCloseTo(0.109375, 14);
    expect(signTest(10, 0).pValue).toBeCloseTo(2 / 1024, 14);
    expect(signTest(5, 5).pValue).toBe(1);
    expect(signTest(0, 0).pValue).toBe(1);
  });

  it('Wilson interval brackets the preference and matches the formula', () => {
    const [lo, hi] = wilsonInterval(60, 100);
    expect(lo).toBeCloseTo(0.502002586791062, 12);
    expect(hi).toBeCloseTo(0.690598713567541, 12);
    expect(wilsonInterval(0, 10)[0]).toBe(0);
    expect(wilsonInterval(0, 0)).toEqual([0, 1]);
    const summary = preferenceSummary(60, 40, 25);
    expect(summary).toMatchObject({ wins: 60, losses: 40, ties: 25, preference: 0.6 });
    expect(summary.interval[0]).toBeLessThan(0.6);
    expect(summary.interval[1]).toBeGreaterThan(0.6);
  });
});

describe('paired tests', () => {
  const a = [0.61, 0.42, 0.55, 0.71, 0.38, 0.66, 0.49, 0.58, 0.62, 0.47];
  const b = [0.52, 0.4, 0.51, 0.6, 0.41, 0.59, 0.45, 0.5, 0.57, 0.44];

  it('paired t-test matches a hand computation', () => {
    const d = a.map((x, i) => x - b[i]!);
    const mean = d.reduce((s, x) => s + x, 0) / d.length;
    const sd = Math.sqrt(d.reduce((s, x) => s + (x - mean) ** 2, 0) / (d.length - 1));
    const t = mean / (sd / Math.sqrt(d.length));
    const result = pairedTTest(a, b);
    expect(result.t).toBeCloseTo(t, 12);
    expect(result.df).toBe(9);
    expect(result.pValue).toBeCloseTo(2 * studentTCdf(-Math.abs(t), 9), 14);
    expect(result.pValue).toBeLessThan(0.01);
    expect(pairedTTest(a, a).pValue).toBe(1);
    expect(() => pairedTTest([1], [1, 2])).toThrow(RangeError);
  });

  it('randomisation test is reproducible by seed, agrees with the t-test, and never reports 0', () => {
    const first = randomisationTest(a, b, { trials: 5_000, seed: 42 });
    expect(randomisationTest(a, b, { trials: 5_000, seed: 42 }).pValue).toBe(first.pValue);
    expect(first.pValue).toBeLessThan(0.01);
    expect(first.pValue).toBeGreaterThan(0);
    // n = 10: all 2^10 sign patterns give the exact permutation p-value the sampled one estimates.
    const d = a.map((x, i) => x - b[i]!);
    const observed = Math.abs(d.reduce((s, x) => s + x, 0));
    let extreme = 0;
    for (let mask = 0; mask < 1024; mask++) {
      const sum = d.reduce((s, x, i) => s + ((mask >> i) & 1 ? -x : x), 0);
      if (Math.abs(sum) >= observed - 1e-12) extreme++;
    }
    const exact = extreme / 1024;
    expect(Math.abs(first.pValue - exact)).toBeLessThan(4 * Math.sqrt((exact * (1 - exact)) / 5_000) + 1 / 5_000);
    expect(randomisationTest(a, a, { trials: 1_000 }).pValue).toBe(1);
  });

  it('finds no difference between two samples of the same distribution (A/A)', () => {
    const random = seededRandom(3);
    const x = Array.from({ length: 200 }, () => random());
    const y = Array.from({ length: 200 }, () => random());
    expect(randomisationTest(x, y, { trials: 2_000, seed: 9 }).pValue).toBeGreaterThan(0.05);
    expect(pairedTTest(x, y).pValue).toBeGreaterThan(0.05);
  });
});
