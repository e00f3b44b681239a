/**
 * Significance tests for A/B outcomes, pure and runtime-neutral.
 *
 *  - signTest: two-sided exact binomial (sign) test of wins vs losses under H0 p = ½ (ties
 *    dropped): p = min(1, 2·P[X ≤ min(wins, losses)]), X ~ Binomial(wins + losses, ½).
 *  - wilsonInterval: Wilson score interval for a proportion (here the preference
 *    wins / (wins + losses)); better than the normal interval near 0, 1 and for small n.
 *  - pairedTTest: Student's t on per-query differences, two-sided, df = n − 1.
 *  - randomisationTest: paired randomisation (sign-flip permutation) test of the mean difference,
 *    two-sided, with a seeded PRNG; p = (1 + #{|mean*| ≥ |mean|}) / (trials + 1), which is never 0
 *    (Phipson & Smyth 2010).
 *
 * The t and binomial tails go through the regularized incomplete beta function I_x(a, b)
 * (continued fraction, modified Lentz; Numerical Recipes §6.4), with ln Γ by Lanczos (g = 7).
 * The well-kept packaged alternative (@stdlib's t CDF) installs 225 packages for these ~60 lines.
 */
import { seededRandom } from './random.js';

const LANCZOS = [
  0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313, -176.61502916214059, 12.507343278686905,
  -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7,
];

/** ln Γ(x) for x > 0. */
export function logGamma(x: number): number {
  if (x < 0.5) return Math.log(Math.PI / Math.abs(Math.sin(Math.PI * x))) - logGamma(1 - x); // reflection
  const z = x - 1;
  let sum = LANCZOS[0]!;
  for (let i = 1; i < LANCZOS.length; i++) sum += LANCZOS[i]! / (z + i);
  const t = z + 7.5;
  return 0.5 * Math.log(2 * Math.PI) + (z + 0.5) * Math.log(t) - t + Math.log(sum);
}

/** Continued fraction for I_x(a, b), valid where x < (a + 1) / (a + b + 2). */
function betaContinuedFraction(x: number, a: number, b: number): number {
  const tiny = 1e-300;
  let c = 1;
  let d = 1 - ((a + b) * x) / (a + 1);
  if (Math.abs(d) < tiny) d = tiny;
  d = 1 / d;
  let h = d;
  for (let m = 1; m <= 10_000; m++) {
    const m2 = 2 * m;
    let aa = (m * (b - m) * x) / ((a + m2 - 1) * (a + m2));
    d = 1 + aa * d;
    if (Math.abs(d) < tiny) d = tiny;
    c = 1 + aa / c;
    if (Math.abs(c) < tiny) c = tiny;
    d = 1 / d;
    h *= d * c;
    aa = (-(a + m) * (a + b + m) * x) / ((a + m2) * (a + m2 + 1));
    d = 1 + aa * d;
    if (Math.abs(d) < tiny) d = tiny;
    c = 1 + aa / c;
    if (Math.abs(c) < tiny) c = tiny;
    d = 1 / d;
    const step = d * c;
    h *= step;
    if (Math.abs(step - 1) < 1e-15) break;
  }
  return h;
}

/** Regularized incomplete beta I_x(a, b), a, b > 0, x ∈ [0, 1]. */
export function incompleteBeta(x: number, a: number, b: number): number {
  if (!(a > 0 && b > 0) || !(x >= 0 && x <= 1)) throw new RangeError(`incompleteBeta(${x}, ${a}, ${b}) out of domain`);
  if (x === 0 || x === 1) return x;
  const front = Math.exp(logGamma(a + b) - logGamma(a) - logGamma(b) + a * Math.log(x) + b * Math.log(1 - x));
  return x < (a + 1) / (a + b + 2) ? (front * betaContinuedFraction(x, a, b)) / a : 1 - (front * betaContinuedFraction(1 - x, b, a)) / b;
}

/** P[T ≤ t] for Student's t with `df` > 0 degrees of freedom. */
export function studentTCdf(t: number, df: number): number {
  if (Number.isNaN(t)) return Number.NaN;
  if (!Number.isFinite(t)) return t > 0 ? 1 : 0;
  const tail = 0.5 * incompleteBeta(df / (df + t * t), df / 2, 0.5); // P[T > |t|]
  return t >= 0 ? 1 - tail : tail;
}

/** P[X ≤ k] for X ~ Binomial(n, p). */
export function binomialCdf(k: number, n: number, p: number): number {
  if (k < 0) return 0;
  if (k >= n) return 1;
  return incompleteBeta(1 - p, n - k, k + 1);
}

export interface SignTest {
  wins: number;
  losses: number;
  /** Two-sided exact p-value (1 when there is nothing to compare). */
  pValue: number;
}

export function signTest(wins: number, losses: number): SignTest {
  const n = wins + losses;
  const pValue = n === 0 ? 1 : Math.min(1, 2 * binomialCdf(Math.min(wins, losses), n, 0.5));
  return { wins, losses, pValue };
}

/** 97.5th percentile of the standard normal: the z of a two-sided 95 % interval. */
export const Z_95 = 1.959963984540054;

/** Wilson score interval for `successes` out of `n` trials; [0, 1] when n = 0. */
export function wilsonInterval(successes: number, n: number, z = Z_95): [number, number] {
  if (n === 0) return [0, 1];
  const phat = successes / n;
  const z2 = z * z;
  const centre = (phat + z2 / (2 * n)) / (1 + z2 / n);
  const half = (z / (1 + z2 / n)) * Math.sqrt((phat * (1 - phat)) / n + z2 / (4 * n * n));
  return [Math.max(0, centre - half), Math.min(1, centre + half)];
}

export interface PreferenceSummary extends SignTest {
  ties: number;
  /** wins / (wins + losses): the share of decided impressions arm A won; ½ when none was decided. */
  preference: number;
  /** 95 % Wilson interval on `preference`. */
  interval: [number, number];
}

/** Interleaving outcome for arm A against arm B. */
export function preferenceSummary(wins: number, losses: number, ties: number): PreferenceSummary {
  const decided = wins + losses;
  return { ...signTest(wins, losses), ties, preference: decided === 0 ? 0.5 : wins / decided, interval: wilsonInterval(wins, decided) };
}

export interface PairedTest {
  /** mean(a − b) */
  meanDifference: number;
  pValue: number;
}

function differences(a: readonly number[], b: readonly number[]): number[] {
  if (a.length !== b.length) throw new RangeError(`paired samples differ in length (${a.length} vs ${b.length})`);
  return a.map((x, i) => x - b[i]!);
}

export function pairedTTest(a: readonly number[], b: readonly number[]): PairedTest & { t: number; df: number } {
  const d = differences(a, b);
  const n = d.length;
  const mean = n === 0 ? 0 : d.reduce((s, x) => s + x, 0) / n;
  if (n < 2) return { meanDifference: mean, t: 0, df: Math.max(0, n - 1), pValue: 1 };
  const variance = d.reduce((s, x) => s + (x - mean) ** 2, 0) / (n - 1);
  if (variance === 0)
    return { meanDifference: mean, t: mean === 0 ? 0 : Math.sign(mean) * Infinity, df: n - 1, pValue: mean === 0 ? 1 : 0 };
  const t = mean / Math.sqrt(variance / n);
  return { meanDifference: mean, t, df: n - 1, pValue: Math.min(1, 2 * studentTCdf(-Math.abs(t), n - 1)) };
}

export interface RandomisationOptions {
  trials?: number;
  seed?: number;
}

export function randomisationTest(
  a: readonly number[],
  b: readonly number[],
  options: RandomisationOptions = {},
): PairedTest & { trials: number } {
  const trials = options.trials ?? 10_000;
  const d = differences(a, b);
  const n = d.length;
  const observed = n === 0 ? 0 : Math.abs(d.reduce((s, x) => s + x, 0) / n);
  const random = seededRandom(options.seed ?? 1);
  // Tolerance: a permuted mean equal to the observed one up to rounding counts as "as extreme".
  const threshold = observed - 1e-12 * Math.max(1, observed);
  let extreme = 0;
  for (let t = 0; t < trials; t++) {
    let sum = 0;
    for (let i = 0; i < n; i++) sum += random() < 0.5 ? d[i]! : -d[i]!;
    if (Math.abs(sum / Math.max(1, n)) >= threshold) extreme++;
  }
  const meanDifference = n === 0 ? 0 : d.reduce((s, x) => s + x, 0) / n;
  return { meanDifference, pValue: (extreme + 1) / (trials + 1), trials };
}
