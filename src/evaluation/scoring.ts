/**
 * Scores runs per query and compares arms with paired tests. Which queries count: every query
 * of the query set that has at least one relevant judgement; a judged query the run lacks (or
 * that failed) scores 0 on every metric, as with `trec_eval -c`. (trec_eval -c would also average
 * in a 0 for judged queries with no relevant document; those are left out here, since no ranking
 * can score on them.)
 */
import { averagePrecision, mean, mrr, ndcgAtK, precisionAtK, recallAtK } from './metrics.js';
import { pairedTTest, randomisationTest } from '../core/experiments/stats.js';
import type { Judgements, Query } from './trec.js';

export type MetricKey = 'ndcg' | 'p' | 'recall' | 'mrr' | 'map';

export interface Metric {
  key: MetricKey;
  label: string;
  score: (ranked: readonly string[], judged: ReadonlyMap<string, number>) => number;
}

export interface Cutoffs {
  /** Cutoff for nDCG and P (default 10). */
  at: number;
  /** Cutoff for Recall (default 100). */
  recallAt: number;
}

export function metricsFor({ at, recallAt }: Cutoffs): Metric[] {
  return [
    { key: 'ndcg', label: `nDCG@${at}`, score: (r, j) => ndcgAtK(r, j, at) },
    { key: 'p', label: `P@${at}`, score: (r, j) => precisionAtK(r, j, at) },
    { key: 'recall', label: `Recall@${recallAt}`, score: (r, j) => recallAtK(r, j, recallAt) },
    { key: 'mrr', label: 'MRR', score: (r, j) => mrr(r, j) },
    { key: 'map', label: 'MAP', score: (r, j) => averagePrecision(r, j) },
  ];
}

/** The query ids that are evaluated: in the query set, with ≥ 1 relevant judgement, in query-set order. */
export function evaluatedQueries(queries: readonly Query[], judgements: Judgements): string[] {
  return queries.filter((q) => [...(judgements.get(q.id)?.values() ?? [])].some((g) => g > 0)).map((q) => q.id);
}

export interface ArmScores {
  arm: string;
  /** Per metric, per evaluated query (aligned with the `queryIds` given to scoreRun). */
  perQuery: Record<MetricKey, number[]>;
  means: Record<MetricKey, number>;
}

export function scoreRun(
  arm: string,
  run: ReadonlyMap<string, readonly string[]>,
  judgements: Judgements,
  queryIds: readonly string[],
  metrics: readonly Metric[],
): ArmScores {
  const perQuery = {} as Record<MetricKey, number[]>;
  const means = {} as Record<MetricKey, number>;
  for (const metric of metrics) {
    perQuery[metric.key] = queryIds.map((qid) => metric.score(run.get(qid) ?? [], judgements.get(qid)!));
    means[metric.key] = mean(perQuery[metric.key]);
  }
  return { arm, perQuery, means };
}

export interface Comparison {
  arm: string;
  baseline: string;
  metric: MetricKey;
  label: string;
  /** mean(arm) − mean(baseline) */
  delta: number;
  pRandomisation: number;
  pTTest: number;
  wins: number;
  losses: number;
  ties: number;
}

export interface CompareOptions {
  trials: number;
  seed: number;
}

/** Paired comparison of `arm` against `baseline` on every metric (same evaluated queries). */
export function compareArms(arm: ArmScores, baseline: ArmScores, metrics: readonly Metric[], options: CompareOptions): Comparison[] {
  return metrics.map((metric) => {
    const a = arm.perQuery[metric.key];
    const b = baseline.perQuery[metric.key];
    let wins = 0;
    let losses = 0;
    a.forEach((x, i) => {
      const d = x - b[i]!;
      if (Math.abs(d) <= 1e-12) return;
      if (d > 0) wins++;
      else losses++;
    });
    return {
      arm: arm.arm,
      baseline: baseline.arm,
      metric: metric.key,
      label: metric.label,
      delta: arm.means[metric.key] - baseline.means[metric.key],
      pRandomisation: randomisationTest(a, b, options).pValue,
      pTTest: pairedTTest(a, b).pValue,
      wins,
      losses,
      ties: a.length - wins - losses,
    };
  });
}
