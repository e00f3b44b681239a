/**
 * Cranfield in the adapters' databases, and the evaluation of an adapter over its 225 queries.
 * In PostgreSQL the vector is a stored generated column with a GIN index (the layout the docs
 * recommend: ranking then reads the stored vector instead of re-parsing every matching row).
 */
import type { OpenedAdapter } from '../../src/adapters/open.js';
import { loadCranfieldDocs } from '../../src/demo/bm25/corpus.js';
import { evaluateRun, loadCranfieldEval, type RunEvaluation } from '../../src/demo/eval/cranfield.js';
import { retrieve } from './contract.js';
import type { Query } from './pg-fixture.js';

export async function loadCranfieldIntoPg(query: Query): Promise<void> {
  await query(`CREATE TABLE cranfield (id integer PRIMARY KEY, title text, body text, author text, bibliography text,
    tsv tsvector GENERATED ALWAYS AS (to_tsvector('english'::regconfig, coalesce(title, '') || ' ' || coalesce(body, ''))) STORED)`);
  const docs = loadCranfieldDocs();
  // One parameterised statement: each column is one array parameter.
  await query(
    `INSERT INTO cranfield (id, title, body, author, bibliography)
    SELECT * FROM unnest($1::integer[], $2::text[], $3::text[], $4::text[], $5::text[])`,
    [
      docs.map((d) => Number(d.id)),
      docs.map((d) => d.title),
      docs.map((d) => d.body),
      docs.map((d) => d.author),
      docs.map((d) => d.bibliography),
    ],
  );
  await query('CREATE INDEX cranfield_tsv ON cranfield USING gin (tsv)');
}

export function cranfieldPgConfig(connection: Record<string, unknown>, search: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    kind: 'postgres',
    name: 'cranfield-postgres',
    source: 'cranfield',
    connection,
    table: 'cranfield',
    columns: { id: 'id', text: 'body', title: 'title', meta: ['author', 'bibliography'] },
    search: { vector: 'tsv', ...search },
  };
}

/** nDCG@10, Recall@100 and MRR of an adapter over all 225 Cranfield queries (k = 100). */
export async function evaluateAdapter(adapter: OpenedAdapter): Promise<RunEvaluation> {
  const run = new Map<string, string[]>();
  for (const query of loadCranfieldEval().queries) {
    const result = await retrieve(adapter, { query: query.text, k: 100, includeText: false });
    run.set(
      query.id,
      result.hits.map((hit) => hit.id),
    );
  }
  return evaluateRun(run);
}

export function figureLine(name: string, figures: RunEvaluation): string {
  return `${name.padEnd(38)} nDCG@10 ${figures.ndcg10.toFixed(4)}  Recall@100 ${figures.recall100.toFixed(4)}  MRR ${figures.mrr.toFixed(4)}  (${figures.queries} queries)`;
}
