/**
 * This replica's tallies of every live experiment, for the JSON outcome report
 * (`x-rcpgw/experiments`). Nothing is shared between replicas: each reports what it served since
 * it started, and Prometheus (src/node/observability) sums the same events across replicas.
 * Memory is bounded by the config: one entry per experiment and arm, a fixed set of numbers each.
 */
import type { JsonObject } from '../protocol/jsonrpc.js';
import type { ArmOutcome, ExperimentHooks, ShadowComparison, ShadowSkip } from './hooks.js';
import type { Outcome } from './interleave.js';
import { preferenceSummary } from './stats.js';

interface ArmTally {
  requests: number;
  errors: number;
  degraded: number;
  empty: number;
  latencyMsSum: number;
  latencyMsMax: number;
}

/** Running means of the pair measures (a measure is absent from a pair when a side failed). */
interface ShadowTally {
  pairs: number;
  skipped: Record<ShadowSkip, number>;
  sums: { overlapAtK: number; rbo: number; kendallTau: number; latencyDeltaMs: number };
  counts: { overlapAtK: number; rbo: number; kendallTau: number };
  primaryErrors: number;
  shadowErrors: number;
  primaryEmpty: number;
  shadowEmpty: number;
}

interface InterleaveTally {
  arms: readonly [string, string];
  wins: number;
  losses: number;
  ties: number;
}

interface ExperimentTally {
  arms: Map<string, ArmTally>;
  shadow?: ShadowTally;
  interleave?: InterleaveTally;
}

export class ExperimentLedger implements ExperimentHooks {
  private readonly experiments = new Map<string, ExperimentTally>();
  private readonly since = new Date().toISOString();

  readonly onArmOutcome = (outcome: ArmOutcome): void => {
    const tally = this.tally(outcome.experiment);
    let arm = tally.arms.get(outcome.arm);
    if (!arm) tally.arms.set(outcome.arm, (arm = { requests: 0, errors: 0, degraded: 0, empty: 0, latencyMsSum: 0, latencyMsMax: 0 }));
    arm.requests++;
    if (!outcome.ok) arm.errors++;
    if (outcome.degraded) arm.degraded++;
    if (outcome.empty) arm.empty++;
    arm.latencyMsSum += outcome.latencyMs;
    arm.latencyMsMax = Math.max(arm.latencyMsMax, outcome.latencyMs);
  };

  readonly onShadowComparison = (c: ShadowComparison): void => {
    const shadow = this.shadowTally(c.experiment);
    shadow.pairs++;
    shadow.sums.latencyDeltaMs += c.latencyDeltaMs;
    for (const key of ['overlapAtK', 'rbo', 'kendallTau'] as const) {
      const value = c[key];
      if (value === undefined) continue;
      shadow.sums[key] += value;
      shadow.counts[key]++;
    }
    if (c.primaryError) shadow.primaryErrors++;
    if (c.shadowError) shadow.shadowErrors++;
    if (c.primaryEmpty) shadow.primaryEmpty++;
    if (c.shadowEmpty) shadow.shadowEmpty++;
  };

  readonly onShadowSkipped = (experiment: string, why: ShadowSkip): void => {
    this.shadowTally(experiment).skipped[why]++;
  };

  readonly onInterleaveOutcome = (experiment: string, arms: readonly [string, string], outcome: Outcome): void => {
    const tally = this.tally(experiment);
    const il = (tally.interleave ??= { arms, wins: 0, losses: 0, ties: 0 });
    if (outcome === 'A') il.wins++;
    else if (outcome === 'B') il.losses++;
    else il.ties++;
  };

  /** The report: per experiment, per arm counts and mean latency, shadow means, interleave preference. */
  report(configured: ReadonlyArray<{ id: string; kind: string }>): JsonObject {
    const experiments = configured.map((experiment) => {
      const tally = this.experiments.get(experiment.id);
      const out: JsonObject = { id: experiment.id, kind: experiment.kind, arms: armsReport(tally) };
      if (tally?.shadow) out.shadow = shadowReport(tally.shadow);
      if (tally?.interleave) out.interleave = interleaveReport(tally.interleave);
      return out;
    });
    return { since: this.since, scope: 'replica', experiments };
  }

  private tally(experiment: string): ExperimentTally {
    let tally = this.experiments.get(experiment);
    if (!tally) this.experiments.set(experiment, (tally = { arms: new Map() }));
    return tally;
  }

  private shadowTally(experiment: string): ShadowTally {
    const tally = this.tally(experiment);
    return (tally.shadow ??= {
      pairs: 0,
      skipped: { concurrency: 0, budget: 0 },
      sums: { overlapAtK: 0, rbo: 0, kendallTau: 0, latencyDeltaMs: 0 },
      counts: { overlapAtK: 0, rbo: 0, kendallTau: 0 },
      primaryErrors: 0,
      shadowErrors: 0,
      primaryEmpty: 0,
      shadowEmpty: 0,
    });
  }
}

function armsReport(tally: ExperimentTally | undefined): JsonObject {
  const out: JsonObject = {};
  for (const [name, arm] of [...(tally?.arms ?? [])].sort(([a], [b]) => (a < b ? -1 : 1))) {
    out[name] = {
      requests: arm.requests,
      errors: arm.errors,
      degraded: arm.degraded,
      empty: arm.empty,
      latencyMsMean: arm.requests === 0 ? 0 : round(arm.latencyMsSum / arm.requests),
      latencyMsMax: round(arm.latencyMsMax),
    };
  }
  return out;
}

function shadowReport(s: ShadowTally): JsonObject {
  const mean = (key: 'overlapAtK' | 'rbo' | 'kendallTau'): number | null =>
    s.counts[key] === 0 ? null : round(s.sums[key] / s.counts[key], 4);
  return {
    pairs: s.pairs,
    skipped: { ...s.skipped },
    mean: {
      overlapAtK: mean('overlapAtK'),
      rbo: mean('rbo'),
      kendallTau: mean('kendallTau'),
      latencyDeltaMs: s.pairs === 0 ? null : round(s.sums.latencyDeltaMs / s.pairs),
    },
    primaryErrors: s.primaryErrors,
    shadowErrors: s.shadowErrors,
    primaryEmpty: s.primaryEmpty,
    shadowEmpty: s.shadowEmpty,
  };
}

function interleaveReport(il: InterleaveTally): JsonObject {
  const summary = preferenceSummary(il.wins, il.losses, il.ties);
  return {
    a: il.arms[0],
    b: il.arms[1],
    wins: il.wins,
    losses: il.losses,
    ties: il.ties,
    preference: round(summary.preference, 4),
    interval95: summary.interval.map((x) => round(x, 4)),
    signTestP: Number(summary.pValue.toPrecision(4)),
  };
}

function round(x: number, digits = 1): number {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}
