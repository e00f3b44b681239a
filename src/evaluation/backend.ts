/** What the eval runner asks of a source of rankings: every arm's answer to one query. */
import type { Query, RankedDocs } from './trec.js';

/** arm → its ranked documents, or the error it failed with. */
export type ArmAnswers = Map<string, RankedDocs | Error>;

export interface QueryBudget {
  /** Aborted when the query's deadline passes (reason "deadline"). */
  signal: AbortSignal;
  deadlineMs: number;
}

export interface Backend {
  /** The arms this source answers for, in report order. */
  readonly arms: readonly string[];
  answer(query: Query, k: number, budget: QueryBudget): Promise<ArmAnswers>;
  close(): Promise<void>;
}

/** A mistake in how the evaluation was asked for (exit code 2), as opposed to a source failing. */
export class UsageError extends Error {
  override name = 'UsageError';
}
