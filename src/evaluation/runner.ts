/**
 * Runs a query set through one or more backends with bounded concurrency and a deadline per
 * query. A query whose deadline passes is abandoned (its signal aborts with reason "deadline")
 * and recorded as a failure; a failed query scores 0 (scoring.ts), so a slow or broken arm can
 * never look better than it is.
 */
import pLimit from 'p-limit';
import type { ArmAnswers, Backend, QueryBudget } from './backend.js';
import type { Query, RankedDocs } from './trec.js';

export interface RunOptions {
  /** Queries in flight at once. */
  concurrency: number;
  /** Deadline for one query (all arms of one backend), in ms. */
  deadlineMs: number;
  /** Called after every finished query. */
  onProgress?: (done: number, total: number) => void;
}

/** `task` for every query, at most `concurrency` at a time, each under its own deadline. */
export async function forEachQuery<T>(
  queries: readonly Query[],
  task: (query: Query, budget: QueryBudget) => Promise<T>,
  options: RunOptions,
): Promise<Map<string, T | Error>> {
  const limit = pLimit(options.concurrency);
  const results = new Map<string, T | Error>();
  let done = 0;
  await Promise.all(
    queries.map((query) =>
      limit(async () => {
        results.set(query.id, await withDeadline((budget) => task(query, budget), options.deadlineMs));
        options.onProgress?.(++done, queries.length);
      }),
    ),
  );
  return results;
}

async function withDeadline<T>(run: (budget: QueryBudget) => Promise<T>, deadlineMs: number): Promise<T | Error> {
  const controller = new AbortController();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const expired = new Promise<Error>((resolve) => {
    timer = setTimeout(() => {
      controller.abort('deadline');
      resolve(new Error(`deadline of ${deadlineMs} ms exceeded`));
    }, deadlineMs);
  });
  try {
    return await Promise.race([
      run({ signal: controller.signal, deadlineMs }).catch((err: unknown) => (err instanceof Error ? err : new Error(String(err)))),
      expired,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

export interface Failure {
  qid: string;
  message: string;
}

export interface CollectedRuns {
  /** arm → qid → ranked documents (failed queries are absent). */
  runs: Map<string, Map<string, RankedDocs>>;
  failures: Map<string, Failure[]>;
}

/** Every backend's arms over every query. */
export async function collectRuns(
  queries: readonly Query[],
  backends: readonly Backend[],
  k: number,
  options: RunOptions,
): Promise<CollectedRuns> {
  const arms = backends.flatMap((backend) => backend.arms);
  const runs = new Map(arms.map((arm) => [arm, new Map<string, RankedDocs>()]));
  const failures = new Map<string, Failure[]>(arms.map((arm) => [arm, []]));
  const answers = await forEachQuery(
    queries,
    async (query, budget) => {
      const merged: ArmAnswers = new Map();
      for (const answer of await Promise.all(backends.map((backend) => backend.answer(query, k, budget)))) {
        for (const [arm, result] of answer) merged.set(arm, result);
      }
      return merged;
    },
    options,
  );
  for (const query of queries) {
    const answer = answers.get(query.id)!;
    for (const arm of arms) {
      const result = answer instanceof Error ? answer : (answer.get(arm) ?? new Error('no answer'));
      if (result instanceof Error) failures.get(arm)!.push({ qid: query.id, message: result.message });
      else runs.get(arm)!.set(query.id, result);
    }
  }
  return { runs, failures };
}
