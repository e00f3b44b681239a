/**
 * TREC file formats, read and written as trec_eval does. Every reading error names the file and
 * line (`qrels.txt:12: …`).
 *
 *  - qrels: `qid iter docid rel`, whitespace-separated; `iter` is ignored; `rel` is an integer
 *    (> 0 relevant, graded by value; ≤ 0 judged non-relevant). A (qid, docid) pair judged twice
 *    is an error, as in trec_eval.
 *  - run:   `qid Q0 docid rank score tag`. Like trec_eval, the rank column is ignored: a query's
 *    documents are ordered by score, descending, ties broken by docid in descending string
 *    order. A docid repeated within a query is an error, as in trec_eval.
 *  - queries: `qid<TAB>text` lines, or JSON lines `{"qid": …, "text": …}` (also `id`/`_id` and
 *    `query`), told apart by the first non-blank character.
 *
 * Blank lines and lines starting with `#` are skipped in every format.
 */

export class EvalInputError extends Error {
  constructor(
    readonly file: string,
    readonly line: number | undefined,
    detail: string,
  ) {
    super(line === undefined ? `${file}: ${detail}` : `${file}:${line}: ${detail}`);
    this.name = 'EvalInputError';
  }
}

export interface Query {
  id: string;
  text: string;
}

/** qid → (docid → gain). */
export type Judgements = Map<string, Map<string, number>>;

export interface Qrels {
  judgements: Judgements;
  /** qid → the first line that judges it, for errors about that query. */
  lineOf: Map<string, number>;
}

/** A ranked list as a run file holds it: docids with their scores, best first. */
export type RankedDocs = Array<{ id: string; score: number }>;

export interface RunFile {
  tag: string;
  /** qid → documents in trec_eval order. */
  run: Map<string, RankedDocs>;
  lineOf: Map<string, number>;
}

function* contentLines(text: string): Generator<[number, string]> {
  const lines = text.split(/\r?\n/);
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!.trim();
    if (line.length > 0 && !line.startsWith('#')) yield [i + 1, line];
  }
}

export function parseQrels(text: string, file: string): Qrels {
  const judgements: Judgements = new Map();
  const lineOf = new Map<string, number>();
  const judgedAt = new Map<string, number>();
  for (const [line, content] of contentLines(text)) {
    const fields = content.split(/\s+/);
    if (fields.length !== 4) throw new EvalInputError(file, line, `expected 4 columns "qid iter docid rel", got ${fields.length}`);
    const [qid, , docid, rel] = fields as [string, string, string, string];
    if (!/^[+-]?\d+$/.test(rel)) throw new EvalInputError(file, line, `relevance "${rel}" is not an integer`);
    const pair = `${qid}\u0000${docid}`;
    const earlier = judgedAt.get(pair);
    if (earlier !== undefined)
      throw new EvalInputError(file, line, `document "${docid}" is judged twice for query "${qid}" (also line ${earlier})`);
    judgedAt.set(pair, line);
    if (!judgements.has(qid)) {
      judgements.set(qid, new Map());
      lineOf.set(qid, line);
    }
    judgements.get(qid)!.set(docid, Number(rel));
  }
  if (judgements.size === 0) throw new EvalInputError(file, undefined, 'no judgements found');
  return { judgements, lineOf };
}

export function formatQrels(judgements: Judgements): string {
  let out = '';
  for (const [qid, docs] of judgements) for (const [docid, rel] of docs) out += `${qid} 0 ${docid} ${rel}\n`;
  return out;
}

/** trec_eval's order: score descending, ties by docid descending. */
export function trecOrder(a: { id: string; score: number }, b: { id: string; score: number }): number {
  if (a.score !== b.score) return b.score - a.score;
  return a.id < b.id ? 1 : a.id > b.id ? -1 : 0;
}

export function parseRun(text: string, file: string): RunFile {
  const run = new Map<string, RankedDocs>();
  const lineOf = new Map<string, number>();
  const seen = new Map<string, number>();
  let tag: string | undefined;
  for (const [line, content] of contentLines(text)) {
    const fields = content.split(/\s+/);
    if (fields.length !== 6) throw new EvalInputError(file, line, `expected 6 columns "qid Q0 docid rank score tag", got ${fields.length}`);
    const [qid, , docid, rank, scoreText, lineTag] = fields as [string, string, string, string, string, string];
    if (!/^[+-]?\d+$/.test(rank)) throw new EvalInputError(file, line, `rank "${rank}" is not an integer`);
    const score = Number(scoreText);
    if (scoreText.length === 0 || !Number.isFinite(score))
      throw new EvalInputError(file, line, `score "${scoreText}" is not a finite number`);
    if (tag !== undefined && lineTag !== tag)
      throw new EvalInputError(file, line, `run tag "${lineTag}" differs from "${tag}" (one run per file)`);
    tag = lineTag;
    const pair = `${qid}\u0000${docid}`;
    const earlier = seen.get(pair);
    if (earlier !== undefined)
      throw new EvalInputError(file, line, `document "${docid}" appears twice for query "${qid}" (also line ${earlier})`);
    seen.set(pair, line);
    if (!run.has(qid)) {
      run.set(qid, []);
      lineOf.set(qid, line);
    }
    run.get(qid)!.push({ id: docid, score });
  }
  if (tag === undefined) throw new EvalInputError(file, undefined, 'no run lines found');
  for (const docs of run.values()) docs.sort(trecOrder);
  return { tag, run, lineOf };
}

/** The largest double below `x` (for x finite). */
export function nextDown(x: number): number {
  if (x === 0) return -Number.MIN_VALUE;
  const view = new DataView(new ArrayBuffer(8));
  view.setFloat64(0, x);
  const bits = view.getBigInt64(0);
  view.setBigInt64(0, x > 0 ? bits - 1n : bits + 1n);
  return view.getFloat64(0);
}

const TOKEN = /^\S+$/;

/**
 * A run file in the served order. trec_eval re-sorts by score, so where a score does not fall
 * strictly below the one above it (a tie), it is written as the next double below that line's:
 * the file then ranks exactly as served, and every score is within a few ulps of the real one.
 */
export function formatRun(tag: string, run: ReadonlyMap<string, RankedDocs>): string {
  if (!TOKEN.test(tag)) throw new RangeError(`run tag "${tag}" must be one word`);
  let out = '';
  for (const [qid, docs] of run) {
    if (!TOKEN.test(qid)) throw new RangeError(`query id "${qid}" contains whitespace`);
    let previous = Infinity;
    docs.forEach((doc, i) => {
      if (!TOKEN.test(doc.id)) throw new RangeError(`document id "${doc.id}" (query ${qid}) contains whitespace`);
      const score = doc.score < previous ? doc.score : nextDown(previous);
      previous = score;
      out += `${qid} Q0 ${doc.id} ${i + 1} ${String(score)} ${tag}\n`;
    });
  }
  return out;
}

export function parseQueries(text: string, file: string): Query[] {
  const queries: Query[] = [];
  const seen = new Map<string, number>();
  let jsonLines: boolean | undefined;
  for (const [line, content] of contentLines(text)) {
    jsonLines ??= content.startsWith('{');
    const query = jsonLines ? jsonQuery(content, file, line) : tsvQuery(content, file, line);
    const earlier = seen.get(query.id);
    if (earlier !== undefined) throw new EvalInputError(file, line, `query id "${query.id}" appears twice (also line ${earlier})`);
    seen.set(query.id, line);
    queries.push(query);
  }
  if (queries.length === 0) throw new EvalInputError(file, undefined, 'no queries found');
  return queries;
}

function tsvQuery(content: string, file: string, line: number): Query {
  const tab = content.indexOf('\t');
  if (tab <= 0) throw new EvalInputError(file, line, 'expected "qid<TAB>text"');
  const text = content.slice(tab + 1).trim();
  if (text.length === 0) throw new EvalInputError(file, line, 'empty query text');
  return { id: content.slice(0, tab).trim(), text };
}

function jsonQuery(content: string, file: string, line: number): Query {
  let value: unknown;
  try {
    value = JSON.parse(content);
  } catch (err) {
    throw new EvalInputError(file, line, `not valid JSON: ${(err as Error).message}`);
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new EvalInputError(file, line, 'expected a JSON object');
  const record = value as Record<string, unknown>;
  const id = record.qid ?? record.id ?? record._id;
  const text = record.text ?? record.query;
  if ((typeof id !== 'string' || id.length === 0) && typeof id !== 'number')
    throw new EvalInputError(file, line, 'expected a "qid" (or "id", "_id") string or number');
  if (typeof text !== 'string' || text.trim().length === 0)
    throw new EvalInputError(file, line, 'expected a non-empty "text" (or "query") string');
  return { id: String(id), text: text.trim() };
}
