/**
 * How far two rankings agree (shadow comparisons, offline diagnostics). Lists are hit ids best
 * first; a repeated id counts only at its first rank.
 *
 *  - overlap@k: |top-k(A) ∩ top-k(B)| / k.
 *  - RBO: rank-biased overlap (Webber, Moffat & Zobel, "A similarity measure for indefinite
 *    rankings", TOIS 2010) with persistence p (default 0.9: the top 10 ranks carry ~86 % of the
 *    weight), in its *extrapolated* form RBO_ext for uneven lists (their eq. 32): it assumes the
 *    agreement seen at the end of the shorter list continues, so two identical lists score exactly
 *    1 and two disjoint lists 0, at any depth.
 *  - Kendall's τ on shared hits: over the ids present in both lists, (concordant − discordant)
 *    pairs / all pairs (τ-a, equal to τ-b here since ranks never tie); undefined below two shared.
 */

function distinct(list: readonly string[]): string[] {
  return [...new Set(list)];
}

export function overlapAtK(a: readonly string[], b: readonly string[], k: number): number {
  if (!Number.isInteger(k) || k < 1) throw new RangeError(`k must be a positive integer, got ${String(k)}`);
  const top = new Set(distinct(a).slice(0, k));
  let shared = 0;
  for (const id of distinct(b).slice(0, k)) if (top.has(id)) shared++;
  return shared / k;
}

export function rankBiasedOverlap(a: readonly string[], b: readonly string[], p = 0.9): number {
  if (!(p > 0 && p < 1)) throw new RangeError(`p must lie in (0, 1), got ${String(p)}`);
  const [x, y] = [distinct(a), distinct(b)];
  const [short, long] = x.length <= y.length ? [x, y] : [y, x];
  const s = short.length;
  const l = long.length;
  if (l === 0) return 1; // two empty rankings agree
  if (s === 0) return 0;
  const seenShort = new Set<string>();
  const seenLong = new Set<string>();
  let overlap = 0; // X_d
  let overlapAtS = 0; // X_s
  let sum = 0;
  let weight = 1; // p^d
  for (let d = 1; d <= l; d++) {
    weight *= p;
    if (d <= s) {
      const x = short[d - 1]!;
      seenShort.add(x);
      if (seenLong.has(x)) overlap++;
    }
    const y = long[d - 1]!;
    seenLong.add(y);
    if (seenShort.has(y)) overlap++;
    if (d === s) overlapAtS = overlap;
    sum += (overlap / d) * weight;
    if (d > s) sum += ((overlapAtS * (d - s)) / (s * d)) * weight;
  }
  return ((1 - p) / p) * sum + ((overlap - overlapAtS) / l + overlapAtS / s) * weight;
}

export function kendallTauShared(a: readonly string[], b: readonly string[]): number | undefined {
  const rankInB = new Map(distinct(b).map((id, i) => [id, i] as const));
  const shared: number[] = []; // B-ranks of the shared ids, in A's order
  for (const id of distinct(a)) {
    const rank = rankInB.get(id);
    if (rank !== undefined) shared.push(rank);
  }
  const n = shared.length;
  if (n < 2) return undefined;
  let score = 0;
  for (let i = 0; i < n; i++) for (let j = i + 1; j < n; j++) score += shared[i]! < shared[j]! ? 1 : -1;
  return score / ((n * (n - 1)) / 2);
}

/** One arm's answer to one request, as a shadow comparison sees it. */
export interface ArmAnswer {
  ids: readonly string[];
  latencyMs: number;
  /** Set when the arm failed (its ids are then ignored). */
  error?: string;
}

export interface PairComparison {
  overlapAtK: number | undefined;
  rbo: number | undefined;
  kendallTau: number | undefined;
  /** Shadow latency minus primary latency. */
  latencyDeltaMs: number;
  primaryError: boolean;
  shadowError: boolean;
  primaryEmpty: boolean;
  shadowEmpty: boolean;
}

/** Compares a primary answer with its shadow; ranking measures only when both succeeded. */
export function comparePair(primary: ArmAnswer, shadow: ArmAnswer, k: number, p = 0.9): PairComparison {
  const bothAnswered = primary.error === undefined && shadow.error === undefined;
  return {
    overlapAtK: bothAnswered ? overlapAtK(primary.ids, shadow.ids, k) : undefined,
    rbo: bothAnswered ? rankBiasedOverlap(primary.ids.slice(0, k), shadow.ids.slice(0, k), p) : undefined,
    kendallTau: bothAnswered ? kendallTauShared(primary.ids.slice(0, k), shadow.ids.slice(0, k)) : undefined,
    latencyDeltaMs: shadow.latencyMs - primary.latencyMs,
    primaryError: primary.error !== undefined,
    shadowError: shadow.error !== undefined,
    primaryEmpty: primary.error === undefined && primary.ids.length === 0,
    shadowEmpty: shadow.error === undefined && shadow.ids.length === 0,
  };
}
