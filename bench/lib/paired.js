/**
 * Paired statistics for benchmark rounds: two servers loaded in turn, round after round, on a
 * host whose speed drifts (bench/compare.js). A round's ratio (variant ÷ reference, both from
 * the same round) cancels the drift that a whole-run median keeps; the sign test then says how
 * often a difference that size would show up by chance, so a few-percent change is judged with
 * a number instead of by eye (docs/performance.md, "Instruments").
 */

/** The median of `xs` (the upper one of an even count, as compare.js has always reported). */
export function median(xs) {
  return [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
}

/**
 * Two-sided sign test: the chance, if lower and higher were equally likely each round, of a split
 * at least as uneven as `lower` against `higher` (ties are left out before calling).
 */
export function signTestP(lower, higher) {
  const n = lower + higher;
  if (n === 0) return 1;
  const fewer = Math.min(lower, higher);
  let tail = 0;
  let term = 0.5 ** n; // C(n, 0) / 2^n
  for (let i = 0; i <= fewer; i++) {
    tail += term;
    term = (term * (n - i)) / (i + 1); // C(n, i + 1) / 2^n
  }
  return Math.min(1, 2 * tail);
}

/**
 * `variant` against `reference`, round by round (same length, same rounds): the median of the
 * per-round ratios, in how many rounds the variant was lower and higher, and the sign test's p.
 */
export function pairedRatio(variant, reference) {
  if (variant.length !== reference.length || variant.length === 0) throw new Error('paired rounds must match and not be empty');
  const ratios = variant.map((value, i) => value / reference[i]);
  const lower = ratios.filter((r) => r < 1).length;
  const higher = ratios.filter((r) => r > 1).length;
  return { median: median(ratios), lower, higher, rounds: ratios.length, p: signTestP(lower, higher) };
}

/** `0.939, lower in 14 of 16 rounds (sign test p = 0.004)`. */
export function describePaired({ median: m, lower, rounds, p }) {
  return `${m.toFixed(3)}, lower in ${lower} of ${rounds} rounds (sign test p = ${p < 0.001 ? '< 0.001' : p.toFixed(3)})`;
}
