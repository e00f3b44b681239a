/**
 * Prometheus metrics of live experiments (core/experiments/hooks.ts events), and the optional
 * JSON-lines file of shadow comparisons. Labels come from the config only (experiment ids, arm
 * names), so their number is bounded; never a query or a hit id.
 *
 * The interleaving p-value and preference gauges are computed at scrape time from this process's
 * counters; with `serve --workers N` they are left out of the merged /metrics (a p-value does not
 * add up) — the counters are there, and `x-rcpgw/experiments` reports each process.
 */
import { createWriteStream, type WriteStream } from 'node:fs';
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { ExperimentHooks, ShadowComparison } from '../../core/experiments/hooks.js';
import { preferenceSummary } from '../../core/experiments/stats.js';

const PREFIX = 'rcpgw_experiment_';
const LATENCY_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
const SHARE_BUCKETS = [0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.99, 1];
const TAU_BUCKETS = [-1, -0.5, -0.2, 0, 0.2, 0.4, 0.6, 0.8, 0.9, 0.99, 1];
const DELTA_BUCKETS = [-5, -1, -0.25, -0.1, -0.025, -0.005, 0, 0.005, 0.025, 0.1, 0.25, 1, 5];

export class ExperimentMetrics {
  private readonly requests: Counter<'experiment' | 'arm' | 'role' | 'outcome'>;
  private readonly degraded: Counter<'experiment' | 'arm'>;
  private readonly empty: Counter<'experiment' | 'arm'>;
  private readonly latency: Histogram<'experiment' | 'arm' | 'role'>;
  private readonly pairs: Counter<'experiment'>;
  private readonly skipped: Counter<'experiment' | 'reason'>;
  private readonly differences: Counter<'experiment' | 'kind'>;
  private readonly overlap: Histogram<'experiment'>;
  private readonly rbo: Histogram<'experiment'>;
  private readonly tau: Histogram<'experiment'>;
  private readonly latencyDelta: Histogram<'experiment'>;
  private readonly impressions: Counter<'experiment' | 'winner'>;
  /** Interleave experiment → [arm A, arm B, wins, losses, ties], for the scrape-time gauges. */
  private readonly tallies = new Map<string, { arms: readonly [string, string]; wins: number; losses: number; ties: number }>();
  private readonly files = new Map<string, WriteStream>();

  constructor(registry: Registry) {
    const registers = [registry];
    const counter = <L extends string>(name: string, help: string, labelNames: L[]): Counter<L> =>
      new Counter({ name: `${PREFIX}${name}`, help, labelNames, registers });
    const histogram = <L extends string>(name: string, help: string, labelNames: L[], buckets: number[]): Histogram<L> =>
      new Histogram({ name: `${PREFIX}${name}`, help, labelNames, buckets, registers });
    this.requests = counter('requests_total', 'Arm runs, by experiment, arm, role (served, shadow, interleaved) and outcome (ok, error).', [
      'experiment',
      'arm',
      'role',
      'outcome',
    ]);
    this.degraded = counter('degraded_total', 'Arm answers with a non-empty _meta.degraded.', ['experiment', 'arm']);
    this.empty = counter('empty_total', 'Arm answers with no hits.', ['experiment', 'arm']);
    this.latency = histogram(
      'latency_seconds',
      'Arm latency, by experiment, arm and role.',
      ['experiment', 'arm', 'role'],
      LATENCY_BUCKETS,
    );
    this.pairs = counter('shadow_pairs_total', 'Primary/shadow pairs compared.', ['experiment']);
    this.skipped = counter('shadow_skipped_total', 'Sampled requests whose shadow run was refused (reason: concurrency, budget).', [
      'experiment',
      'reason',
    ]);
    this.differences = counter(
      'shadow_differences_total',
      'Pairs where a side failed or was empty (kind: primary_error, shadow_error, primary_empty, shadow_empty).',
      ['experiment', 'kind'],
    );
    this.overlap = histogram('shadow_overlap_at_k', 'overlap@k of primary and shadow top k.', ['experiment'], SHARE_BUCKETS);
    this.rbo = histogram('shadow_rbo', 'Rank-biased overlap (p = 0.9) of primary and shadow top k.', ['experiment'], SHARE_BUCKETS);
    this.tau = histogram('shadow_kendall_tau', "Kendall's tau over the hits both top k share.", ['experiment'], TAU_BUCKETS);
    this.latencyDelta = histogram('shadow_latency_delta_seconds', 'Shadow latency minus primary latency.', ['experiment'], DELTA_BUCKETS);
    this.impressions = counter('interleave_impressions_total', 'Credited interleaving impressions, by winner (an arm, or tie).', [
      'experiment',
      'winner',
    ]);
    this.preferenceGauges(registry);
  }

  hooks(): ExperimentHooks {
    return {
      onArmOutcome: (o) => {
        this.requests.labels(o.experiment, o.arm, o.role, o.ok ? 'ok' : 'error').inc();
        this.latency.labels(o.experiment, o.arm, o.role).observe(o.latencyMs / 1000);
        if (o.degraded) this.degraded.labels(o.experiment, o.arm).inc();
        if (o.empty) this.empty.labels(o.experiment, o.arm).inc();
      },
      onShadowComparison: (c, file) => {
        this.shadowPair(c);
        if (file !== undefined) this.fileFor(file).write(`${JSON.stringify(c)}\n`);
      },
      onShadowSkipped: (experiment, why) => this.skipped.labels(experiment, why).inc(),
      onInterleaveOutcome: (experiment, arms, outcome) => {
        let tally = this.tallies.get(experiment);
        if (!tally) this.tallies.set(experiment, (tally = { arms, wins: 0, losses: 0, ties: 0 }));
        if (outcome === 'A') tally.wins++;
        else if (outcome === 'B') tally.losses++;
        else tally.ties++;
        this.impressions.labels(experiment, outcome === 'tie' ? 'tie' : outcome === 'A' ? arms[0] : arms[1]).inc();
      },
    };
  }

  /** Flush and close the comparison files. */
  async close(): Promise<void> {
    await Promise.all([...this.files.values()].map((stream) => new Promise<void>((resolve) => stream.end(resolve))));
    this.files.clear();
  }

  private shadowPair(c: ShadowComparison): void {
    this.pairs.labels(c.experiment).inc();
    this.latencyDelta.labels(c.experiment).observe(c.latencyDeltaMs / 1000);
    if (c.overlapAtK !== undefined) this.overlap.labels(c.experiment).observe(c.overlapAtK);
    if (c.rbo !== undefined) this.rbo.labels(c.experiment).observe(c.rbo);
    if (c.kendallTau !== undefined) this.tau.labels(c.experiment).observe(c.kendallTau);
    if (c.primaryError) this.differences.labels(c.experiment, 'primary_error').inc();
    if (c.shadowError) this.differences.labels(c.experiment, 'shadow_error').inc();
    if (c.primaryEmpty) this.differences.labels(c.experiment, 'primary_empty').inc();
    if (c.shadowEmpty) this.differences.labels(c.experiment, 'shadow_empty').inc();
  }

  private fileFor(path: string): WriteStream {
    let stream = this.files.get(path);
    if (!stream) {
      stream = createWriteStream(path, { flags: 'a' });
      // A file that cannot be written must not take the gateway down: the metrics still count.
      stream.on('error', () => this.files.delete(path));
      this.files.set(path, stream);
    }
    return stream;
  }

  private preferenceGauges(registry: Registry): void {
    const tallies = this.tallies;
    const pValue: Gauge<'experiment'> = new Gauge({
      name: `${PREFIX}interleave_sign_test_p`,
      help: 'Two-sided sign-test p-value of the interleaving preference (this process).',
      labelNames: ['experiment'],
      registers: [registry],
      aggregator: 'omit',
      collect() {
        for (const [id, t] of tallies) pValue.labels(id).set(preferenceSummary(t.wins, t.losses, t.ties).pValue);
      },
    });
    const preference: Gauge<'experiment' | 'stat'> = new Gauge({
      name: `${PREFIX}interleave_preference`,
      help: 'Share of decided impressions won by the first arm (stat: estimate, lower, upper: 95 % Wilson interval; this process).',
      labelNames: ['experiment', 'stat'],
      registers: [registry],
      aggregator: 'omit',
      collect() {
        for (const [id, t] of tallies) {
          const s = preferenceSummary(t.wins, t.losses, t.ties);
          preference.labels(id, 'estimate').set(s.preference);
          preference.labels(id, 'lower').set(s.interval[0]);
          preference.labels(id, 'upper').set(s.interval[1]);
        }
      },
    });
  }
}
