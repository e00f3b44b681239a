/**
 * Cranfield evaluation harness: the queries, the graded judgements, and a
 * run evaluator reporting nDCG@10, Recall@100 and MRR (spec Appendix F).
 *
 * Gains follow `cranfieldGain` (gain = 5 − position; see metrics.ts).
 */
import { loadCranfieldQrels, loadCranfieldQueries } from '../bm25/corpus.js';
import { cranfieldGain, mean, mrr, ndcgAtK, recallAtK } from '../../evaluation/metrics.js';

export type QueryId = string;
export type DocId = string;

export interface CranfieldEvalSet {
  /** The 225 queries in collection order. */
  queries: Array<{ id: QueryId; text: string }>;
  /** queryId → (docId → gain), gain = 5 − Cranfield position (4 … 1). */
  judgements: Map<QueryId, Map<DocId, number>>;
}

export interface QueryScores {
  ndcg10: number;
  recall100: number;
  /** Reciprocal rank of the first relevant document anywhere in the run's list. */
  rr: number;
}

export interface RunEvaluation {
  ndcg10: number;
  recall100: number;
  /** Mean reciprocal rank over the evaluated queries (no cutoff beyond the run's own depth). */
  mrr: number;
  /** Number of queries averaged over: every query with ≥ 1 relevant judgement. */
  queries: number;
  /** Per-query scores, for paired comparisons between runs. */
  perQuery: Map<QueryId, QueryScores>;
}

/** Loads queries and qrels (cached by the corpus loader) into an evaluation set. */
export function loadCranfieldEval(dataDir?: string): CranfieldEvalSet {
  const queries = loadCranfieldQueries(dataDir).map((q) => ({ id: q.id, text: q.text }));
  const judgements = new Map<QueryId, Map<DocId, number>>();
  for (const { queryId, docId, position } of loadCranfieldQrels(dataDir)) {
    let forQuery = judgements.get(queryId);
    if (forQuery === undefined) {
      forQuery = new Map();
      judgements.set(queryId, forQuery);
    }
    // Should a pair ever be judged twice, keep the higher gain.
    forQuery.set(docId, Math.max(forQuery.get(docId) ?? 0, cranfieldGain(position)));
  }
  return { queries, judgements };
}

/**
 * Scores a run (queryId → ranked doc ids, best first) against the judgements
 * (default: the bundled Cranfield qrels). Every judged query counts: a query
 * missing from the run scores 0 (as trec_eval -c), so a partial run cannot
 * look better than it is. Run entries for unjudged queries are ignored.
 */
export function evaluateRun(
  run: ReadonlyMap<QueryId, readonly string[]>,
  judgements: ReadonlyMap<QueryId, ReadonlyMap<DocId, number>> = loadCranfieldEval().judgements,
): RunEvaluation {
  const perQuery = new Map<QueryId, QueryScores>();
  for (const [queryId, judged] of judgements) {
    if (![...judged.values()].some((g) => g > 0)) continue;
    const ranked = run.get(queryId) ?? [];
    perQuery.set(queryId, {
      ndcg10: ndcgAtK(ranked, judged, 10),
      recall100: recallAtK(ranked, judged, 100),
      rr: mrr(ranked, judged),
    });
  }
  const scores = [...perQuery.values()];
  return {
    ndcg10: mean(scores.map((s) => s.ndcg10)),
    recall100: mean(scores.map((s) => s.recall100)),
    mrr: mean(scores.map((s) => s.rr)),
    queries: scores.length,
    perQuery,
  };
}
