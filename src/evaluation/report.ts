/**
 * What `rcp-gateway eval` prints: plain-text tables for people, one JSON document for scripts.
 */
import { renderTable } from '../cli/table.js';
import { armConfigOf } from './arm-fusion.js';
import type { Failure } from './runner.js';
import type { ArmScores, Comparison, Metric } from './scoring.js';
import type { TuneReport } from './tune.js';
import { describeArm } from './tune.js';

export interface EvalSummary {
  /** Where the queries and judgements came from. */
  collection: string;
  queries: number;
  evaluated: number;
  k: number;
  baseline: string;
  metrics: readonly Metric[];
  scores: readonly ArmScores[];
  failures: ReadonlyMap<string, readonly Failure[]>;
  comparisons: readonly Comparison[];
  trials: number;
  seed: number;
}

const fixed = (x: number): string => x.toFixed(4);
const signed = (x: number): string => `${x >= 0 ? '+' : ''}${x.toFixed(4)}`;
const pValue = (p: number): string => (p < 0.0001 ? '<0.0001' : p.toFixed(4));

export function evalText(summary: EvalSummary): string {
  const { metrics } = summary;
  const header = `${summary.collection}: ${summary.evaluated} of ${summary.queries} queries judged, k = ${summary.k}, baseline "${summary.baseline}"\n\n`;
  const armTable = renderTable(
    ['arm', ...metrics.map((m) => m.label), 'failed'],
    summary.scores.map((s) => [s.arm, ...metrics.map((m) => fixed(s.means[m.key])), String(summary.failures.get(s.arm)?.length ?? 0)]),
  );
  if (summary.comparisons.length === 0) return header + armTable;
  const intro = `\nPaired against "${summary.baseline}" over ${summary.evaluated} queries (randomisation test: ${summary.trials} trials, seed ${summary.seed}; two-sided paired t-test):\n`;
  const comparisonTable = renderTable(
    ['arm', 'metric', 'delta', 'p (randomisation)', 'p (t-test)', 'wins/losses/ties'],
    summary.comparisons.map((c) => [
      c.arm,
      c.label,
      signed(c.delta),
      pValue(c.pRandomisation),
      pValue(c.pTTest),
      `${c.wins}/${c.losses}/${c.ties}`,
    ]),
  );
  return header + armTable + intro + comparisonTable;
}

export function evalJson(summary: EvalSummary): string {
  return (
    JSON.stringify(
      {
        collection: summary.collection,
        queries: summary.queries,
        evaluated: summary.evaluated,
        k: summary.k,
        baseline: summary.baseline,
        metrics: summary.metrics.map((m) => ({ key: m.key, label: m.label })),
        arms: summary.scores.map((s) => ({
          arm: s.arm,
          means: Object.fromEntries(summary.metrics.map((m) => [m.label, s.means[m.key]])),
          failed: summary.failures.get(s.arm) ?? [],
        })),
        comparisons: summary.comparisons,
        randomisation: { trials: summary.trials, seed: summary.seed },
      },
      null,
      2,
    ) + '\n'
  );
}

export interface TuneSummary {
  report: TuneReport;
  queries: number;
  folds: number;
  seed: number;
}

export function tuneText({ report, queries, folds, seed }: TuneSummary): string {
  const lines = [
    `Tuning ${report.metric} over ${report.candidates} candidate arms, ${folds}-fold cross-validation (seed ${seed}), ${queries} queries\n`,
    renderTable(
      ['setting', report.metric],
      [
        [`as configured: ${describeArm(report.base.arm)}`, fixed(report.base.score)],
        [`tuned, in-sample: ${describeArm(report.best.arm)}`, fixed(report.best.score)],
        ['tuned, cross-validated (held-out folds)', fixed(report.crossValidated)],
      ],
    ),
    '\n',
    renderTable(
      ['fold', 'queries', 'chosen on the other folds', 'train', 'held-out'],
      report.folds.map((f, i) => [String(i + 1), String(f.queries), describeArm(f.chosen), fixed(f.train), fixed(f.test)]),
    ),
    '\nConfig fragment (paste under gateway.experiments.arms):\n',
    JSON.stringify({ tuned: armConfigOf(report.best.arm) }, null, 2),
    '\n',
  ];
  return lines.join('');
}

export function tuneJson({ report, queries, folds, seed }: TuneSummary): string {
  return (
    JSON.stringify(
      {
        metric: report.metric,
        queries,
        folds,
        seed,
        candidates: report.candidates,
        configured: { arm: armConfigOf(report.base.arm), score: report.base.score },
        tuned: { arm: armConfigOf(report.best.arm), inSample: report.best.score, crossValidated: report.crossValidated },
        perFold: report.folds.map((f) => ({ queries: f.queries, chosen: armConfigOf(f.chosen), train: f.train, heldOut: f.test })),
      },
      null,
      2,
    ) + '\n'
  );
}
