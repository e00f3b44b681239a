/**
 * Standard IR metrics (spec Appendix F), as pure per-query functions, with trec_eval's
 * definitions (trec_eval 9.0.x: `ndcg_cut`, `P`, `recall`, `recip_rank`, `map`).
 *
 * Conventions, shared by every function here:
 *  - `ranked` is one system's ranking for one query, best first, as stringified ids. It is
 *    scored in the order given (the order the system served). trec_eval instead re-sorts a run
 *    file by score, descending, breaking ties by docno in *descending* string order; trec.ts
 *    reads run files that way, so scoring a file here gives trec_eval's figures.
 *  - A repeated id counts only at its first (best) rank; later copies still occupy their rank
 *    but earn nothing, so a run cannot inflate a score by repeating a relevant document
 *    (trec_eval refuses such a run outright; trec.ts refuses it too, naming the line).
 *  - `judgements` maps docId → graded gain: the qrels relevance value. A document is *relevant*
 *    when its gain is > 0 (trec_eval's default relevance level 1 for integer qrels); unjudged
 *    documents have gain 0 (non-relevant).
 *  - `k` is a cutoff ≥ 0 (`Infinity` allowed); only `ranked[0..k)` is read.
 *  - A query with no relevant document scores 0 on every metric (the caller decides whether such
 *    a query is evaluated at all).
 *
 * Definitions (rank r counts from 1; rel(r) = gain of the document at rank r; R = number of
 * relevant judged documents):
 *  - nDCG@k = DCG@k / IDCG@k, DCG@k = Σ_{r ≤ k} rel(r) / log2(r + 1): linear gain (the qrels value
 *    itself, not 2^rel − 1), the log2(r + 1) discount of trec_eval 9 (trec_eval 8 left rank 2
 *    undiscounted too). IDCG@k uses every judged gain of the query, sorted descending, cut at k.
 *  - P@k = |relevant in top k| / k (the denominator stays k when fewer than k are retrieved).
 *  - Recall@k = |relevant in top k| / R.
 *  - RR = 1 / rank of the first relevant document (0 if none); MRR is its mean over queries.
 *  - AP = Σ_{relevant r} P@r / R over the whole ranking (relevant documents never retrieved add 0);
 *    MAP is its mean over queries.
 *
 * Cranfield gains: the collection grades a relevant pair by *position*
 * 1 (complete answer) … 4 (minimum interest). We use gain = 5 − position, i.e.
 * 1 → 4, 2 → 3, 3 → 2, 4 → 1: linear, so every judged document is relevant
 * (the collection lists only relevant pairs) and the most relevant is worth
 * four times the least. See {@link cranfieldGain}.
 */

/** Cranfield position (1 = most relevant … 4 = least) → graded gain 5 − position (4 … 1). */
export function cranfieldGain(position: number): number {
  if (!Number.isInteger(position) || position < 1 || position > 4) {
    throw new RangeError(`Cranfield position must be 1..4, got ${String(position)}`);
  }
  return 5 - position;
}

function checkCutoff(k: number): void {
  if (!(k >= 0) || (!Number.isInteger(k) && k !== Infinity)) {
    throw new RangeError(`cutoff k must be a non-negative integer or Infinity, got ${String(k)}`);
  }
}

/** Gains of the first `k` ranks, with repeated ids earning 0 after their first rank. */
function gainsAt(ranked: readonly string[], judgements: ReadonlyMap<string, number>, k: number): number[] {
  checkCutoff(k);
  const seen = new Set<string>();
  const gains: number[] = [];
  const n = Math.min(k, ranked.length);
  for (let i = 0; i < n; i++) {
    const id = ranked[i];
    const gain = seen.has(id) ? 0 : Math.max(0, judgements.get(id) ?? 0);
    seen.add(id);
    gains.push(gain);
  }
  return gains;
}

/** DCG = Σ_{i=1..n} gain_i / log2(i + 1) (spec Appendix F, trec_eval 9 `ndcg_cut`: linear gain, not 2^rel − 1). */
export function dcg(gains: readonly number[]): number {
  let sum = 0;
  for (let i = 0; i < gains.length; i++) sum += gains[i] / Math.log2(i + 2);
  return sum;
}

function relevantCount(judgements: ReadonlyMap<string, number>): number {
  let n = 0;
  for (const g of judgements.values()) if (g > 0) n++;
  return n;
}

/** nDCG@k = DCG@k / IDCG@k, IDCG from the judged gains sorted descending. In [0, 1]. */
export function ndcgAtK(ranked: readonly string[], judgements: ReadonlyMap<string, number>, k: number): number {
  const actual = dcg(gainsAt(ranked, judgements, k));
  const ideal = [...judgements.values()]
    .filter((g) => g > 0)
    .sort((a, b) => b - a)
    .slice(0, k);
  const best = dcg(ideal);
  return best > 0 ? actual / best : 0;
}

/** Recall@k = |relevant ∩ top k| / |relevant|. In [0, 1]. */
export function recallAtK(ranked: readonly string[], judgements: ReadonlyMap<string, number>, k: number): number {
  const total = relevantCount(judgements);
  if (total === 0) return 0;
  const found = gainsAt(ranked, judgements, k).filter((g) => g > 0).length;
  return found / total;
}

/**
 * Reciprocal rank of the first relevant document within the top `k`
 * (default: the whole list), 0 when there is none. This is the per-query
 * term of MRR; the mean over queries is taken by the caller (e.g. `evaluateRun`).
 */
export function mrr(ranked: readonly string[], judgements: ReadonlyMap<string, number>, k: number = Infinity): number {
  const gains = gainsAt(ranked, judgements, k);
  const first = gains.findIndex((g) => g > 0);
  return first < 0 ? 0 : 1 / (first + 1);
}

/** P@k = |relevant ∩ top k| / k (trec_eval `P_k`: the denominator is k even for a shorter list). */
export function precisionAtK(ranked: readonly string[], judgements: ReadonlyMap<string, number>, k: number): number {
  if (k === 0) return 0;
  if (!Number.isFinite(k)) throw new RangeError('precision needs a finite cutoff');
  return gainsAt(ranked, judgements, k).filter((g) => g > 0).length / k;
}

/** AP = Σ over relevant ranks r of P@r, divided by the number of relevant judged documents (trec_eval `map`). */
export function averagePrecision(ranked: readonly string[], judgements: ReadonlyMap<string, number>, k: number = Infinity): number {
  const total = relevantCount(judgements);
  if (total === 0) return 0;
  let found = 0;
  let sum = 0;
  gainsAt(ranked, judgements, k).forEach((gain, i) => {
    if (gain <= 0) return;
    found++;
    sum += found / (i + 1);
  });
  return sum / total;
}

/** Arithmetic mean; 0 for an empty list. */
export function mean(values: readonly number[]): number {
  return values.length === 0 ? 0 : values.reduce((a, b) => a + b, 0) / values.length;
}
