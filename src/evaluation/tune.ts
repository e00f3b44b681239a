/**
 * Fusion-parameter search with k-fold cross-validation.
 *
 * Every candidate arm (strategy × rrfK × per-engine weights × depth) is scored on every query
 * once, from engine lists fetched once (arm-fusion.ts). Then, per fold, the candidate with the
 * best mean on the other folds is chosen and scored on the held-out fold; the cross-validated
 * figure is the mean of those held-out scores over all queries. It estimates how a tuned setting
 * does on queries it was not tuned on, and sits next to the in-sample best, which is optimistic
 * by construction. The recommended arm is the in-sample best over all queries.
 */
import type { FusionMethod } from '../core/federation/fusion/types.js';
import { seededRandom, shuffled } from '../core/experiments/random.js';
import { fuseArm, windowOf, type EngineList, type ResolvedArm } from './arm-fusion.js';
import type { Metric } from './scoring.js';
import type { Judgements } from './trec.js';

export interface TuneSpace {
  fusions: FusionMethod[];
  /** Tried for RRF only (the other strategies do not read it). */
  rrfKs: number[];
  headrooms: number[];
}

export const DEFAULT_SPACE: TuneSpace = {
  fusions: ['rrf', 'weighted', 'convex'],
  rrfKs: [1, 2, 5, 10, 20, 40, 60, 100, 200],
  headrooms: [1, 1.5, 2, 3, 5],
};

/** Weight vectors on a simplex grid: every way to split `steps` equal parts among n engines. */
export function simplexWeights(n: number, steps: number): number[][] {
  const compositions = (parts: number, total: number): number[][] => {
    if (parts === 1) return [[total]];
    const out: number[][] = [];
    for (let first = total; first >= 0; first--) for (const rest of compositions(parts - 1, total - first)) out.push([first, ...rest]);
    return out;
  };
  return compositions(n, steps).map((parts) => parts.map((x) => x / steps));
}

/** The base arm first (so a tie keeps it), then every grid point over the base arm's engines. */
export function candidateArms(base: ResolvedArm, space: TuneSpace = DEFAULT_SPACE): ResolvedArm[] {
  const n = base.engines.length;
  const weightings = simplexWeights(n, n <= 3 ? 8 : 4).map((ws) => ws.map((w) => Number(w.toFixed(6))));
  const out: ResolvedArm[] = [base];
  for (const fusion of space.fusions) {
    for (const rrfK of fusion === 'rrf' ? space.rrfKs : [base.rrfK]) {
      for (const ws of weightings) {
        for (const fusionHeadroom of space.headrooms) {
          const weights = Object.fromEntries(base.engines.map((id, i) => [id, ws[i]!]));
          out.push({ ...base, name: describeArm({ fusion, rrfK, weights, fusionHeadroom }), fusion, rrfK, weights, fusionHeadroom });
        }
      }
    }
  }
  return out;
}

export function describeArm(arm: Pick<ResolvedArm, 'fusion' | 'rrfK' | 'weights' | 'fusionHeadroom'>): string {
  const weights = Object.entries(arm.weights)
    .map(([id, w]) => `${id}=${w}`)
    .join(',');
  return `${arm.fusion}${arm.fusion === 'rrf' ? ` rrfK=${arm.rrfK}` : ''} weights=${weights} headroom=${arm.fusionHeadroom}`;
}

export interface TuneInput {
  base: ResolvedArm;
  /** qid → engine lists (a query whose lists failed is absent: it scores 0 for every candidate). */
  lists: ReadonlyMap<string, ReadonlyMap<string, EngineList>>;
  judgements: Judgements;
  queryIds: readonly string[];
  metric: Metric;
  k: number;
  folds: number;
  seed: number;
  space?: TuneSpace;
}

export interface FoldResult {
  queries: number;
  chosen: ResolvedArm;
  train: number;
  test: number;
}

export interface TuneReport {
  metric: string;
  candidates: number;
  /** The base arm (the gateway as configured) on all queries. */
  base: { arm: ResolvedArm; score: number };
  /** The best candidate on all queries, and its (optimistic) score there. */
  best: { arm: ResolvedArm; score: number };
  /** Mean held-out score over all queries. */
  crossValidated: number;
  folds: FoldResult[];
}

export async function tune(input: TuneInput): Promise<TuneReport> {
  if (input.folds < 2 || input.folds > input.queryIds.length)
    throw new RangeError(`folds must lie in 2..${input.queryIds.length}, got ${input.folds}`);
  const candidates = candidateArms(input.base, input.space);
  const scores = await scoreMatrix(candidates, input);
  const n = input.queryIds.length;
  const meanOver = (c: number, rows: readonly number[]): number =>
    rows.reduce((sum, q) => sum + scores[c]![q]!, 0) / Math.max(1, rows.length);
  const argmax = (rows: readonly number[]): number => {
    let best = 0;
    let bestScore = -Infinity;
    for (let c = 0; c < candidates.length; c++) {
      const score = meanOver(c, rows);
      if (score > bestScore + 1e-12) [best, bestScore] = [c, score];
    }
    return best;
  };
  const order = shuffled([...Array(n).keys()], seededRandom(input.seed));
  const foldOf = new Map(order.map((q, i) => [q, i % input.folds] as const));
  const all = [...Array(n).keys()];
  let heldOutSum = 0;
  const folds: FoldResult[] = [];
  for (let f = 0; f < input.folds; f++) {
    const test = all.filter((q) => foldOf.get(q) === f);
    const train = all.filter((q) => foldOf.get(q) !== f);
    const chosen = argmax(train);
    const testScore = meanOver(chosen, test);
    heldOutSum += testScore * test.length;
    folds.push({ queries: test.length, chosen: candidates[chosen]!, train: meanOver(chosen, train), test: testScore });
  }
  const best = argmax(all);
  return {
    metric: input.metric.label,
    candidates: candidates.length,
    base: { arm: input.base, score: meanOver(0, all) },
    best: { arm: candidates[best]!, score: meanOver(best, all) },
    crossValidated: heldOutSum / n,
    folds,
  };
}

/** Everything fuseArm reads of an arm, with the depth as the engine windows it yields. */
function fusionKey(arm: ResolvedArm, lists: ReadonlyMap<string, EngineList>, k: number): string {
  const windows = arm.engines.map((id) => (lists.has(id) ? windowOf(arm, lists.get(id)!, k) : 0));
  return JSON.stringify([arm.fusion, arm.fusion === 'rrf' ? arm.rrfK : 0, arm.dedup, arm.engines.map((id) => arm.weights[id]), windows]);
}

/** scores[candidate][query] of the metric. */
async function scoreMatrix(candidates: readonly ResolvedArm[], input: TuneInput): Promise<Float64Array[]> {
  const scores = candidates.map(() => new Float64Array(input.queryIds.length));
  for (let q = 0; q < input.queryIds.length; q++) {
    const qid = input.queryIds[q]!;
    const lists = input.lists.get(qid);
    if (lists === undefined) continue; // failed query: 0 for everyone
    const judged = input.judgements.get(qid)!;
    // Candidates that differ only in depth fuse identically once the engine's maxK caps the windows.
    const seen = new Map<string, number>();
    for (let c = 0; c < candidates.length; c++) {
      const arm = candidates[c]!;
      const key = fusionKey(arm, lists, input.k);
      let score = seen.get(key);
      if (score === undefined) {
        const hits = await fuseArm(arm, lists, input.k);
        score =
          hits === undefined
            ? 0
            : input.metric.score(
                hits.map((hit) => String(hit.id)),
                judged,
              );
        seen.set(key, score);
      }
      scores[c]![q] = score;
    }
  }
  return scores;
}
