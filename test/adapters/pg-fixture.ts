/**
 * The fixture documents in PostgreSQL: typed columns (int, float8, boolean, timestamptz, text[]),
 * loaded with parameterised INSERTs through any client that runs `query(sql, params)`.
 */
import { DOCS, FILTERS } from './fixtures.js';

export type Query = (sql: string, params?: unknown[]) => Promise<unknown>;

export async function loadPgFixture(query: Query, table = 'docs', options: { ginIndex: boolean } = { ginIndex: true }): Promise<void> {
  await query(`CREATE TABLE ${table} (id text PRIMARY KEY, title text, body text NOT NULL, url text, lang text, year integer,
    rating double precision, open boolean, published timestamptz, tags text[], summary text)`);
  for (const d of DOCS) {
    await query(`INSERT INTO ${table} VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`, [
      d.id,
      d.title,
      d.text,
      d.uri,
      d.lang,
      d.year,
      d.rating,
      d.open,
      d.published,
      d.tags,
      d.summary,
    ]);
  }
  if (options.ginIndex) {
    await query(
      `CREATE INDEX ${table}_fts ON ${table} USING gin (to_tsvector('english'::regconfig, coalesce(title, '') || ' ' || coalesce(body, '')))`,
    );
  }
}

/** The adapter config for the fixture table (connection given by the caller). */
export function pgAdapterConfig(connection: Record<string, unknown>, table = 'docs'): Record<string, unknown> {
  return {
    kind: 'postgres',
    name: `pg-${table}`,
    connection,
    table,
    columns: { id: 'id', text: 'body', title: 'title', uri: 'url', meta: ['lang', 'year', 'open', 'tags', 'published', 'rating'] },
    filters: FILTERS,
  };
}
