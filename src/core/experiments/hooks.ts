/**
 * What live experiments report, for metrics and the outcome report. The core calls these; the
 * runtime decides where they go (prom-client and a JSON-lines file under Node,
 * src/node/observability/experiment-metrics.ts; nothing at the edge unless wired).
 */
import type { Outcome } from './interleave.js';
import type { PairComparison } from './compare.js';

/** How one arm fared on one request. */
export interface ArmOutcome {
  experiment: string;
  arm: string;
  /** `served`: the arm answered the client (split, shadow primary, forced); `shadow`: run in the background; `interleaved`: one of two merged arms. */
  role: 'served' | 'shadow' | 'interleaved';
  /** False when the arm failed (every engine of it failed, or a shadow missed its deadline). */
  ok: boolean;
  /** The arm answered with a non-empty `_meta.degraded` (some engine of it failed). */
  degraded: boolean;
  /** The arm answered with no hits. */
  empty: boolean;
  latencyMs: number;
}

/** One primary/shadow pair, compared. */
export interface ShadowComparison extends PairComparison {
  experiment: string;
  primary: string;
  shadow: string;
  /** The cutoff of overlap@k (the request's k). */
  k: number;
  /** When the pair finished, ISO 8601. */
  at: string;
}

export type ShadowSkip = 'concurrency' | 'budget';

export interface ExperimentHooks {
  onArmOutcome?: (outcome: ArmOutcome) => void;
  /** `comparisonsFile`: the experiment's JSON-lines file, when configured (the runtime writes it). */
  onShadowComparison?: (comparison: ShadowComparison, comparisonsFile: string | undefined) => void;
  /** A sampled request did not run its shadow: the concurrency cap or the budget refused it. */
  onShadowSkipped?: (experiment: string, why: ShadowSkip) => void;
  /** One credited impression of an interleave experiment: team A's arm, team B's arm, and who won. */
  onInterleaveOutcome?: (experiment: string, arms: readonly [string, string], outcome: Outcome) => void;
}

/** Calls every hook set given, in order (the ledger and the runtime's own). */
export function composeHooks(...sets: ReadonlyArray<ExperimentHooks | undefined>): Required<ExperimentHooks> {
  const present = sets.filter((set): set is ExperimentHooks => set !== undefined);
  return {
    onArmOutcome: (outcome) => present.forEach((set) => set.onArmOutcome?.(outcome)),
    onShadowComparison: (comparison, file) => present.forEach((set) => set.onShadowComparison?.(comparison, file)),
    onShadowSkipped: (experiment, why) => present.forEach((set) => set.onShadowSkipped?.(experiment, why)),
    onInterleaveOutcome: (experiment, arms, outcome) => present.forEach((set) => set.onInterleaveOutcome?.(experiment, arms, outcome)),
  };
}
