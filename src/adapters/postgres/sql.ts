/**
 * PostgreSQL full-text search as SQL text with numbered parameters. Client input only ever
 * arrives as parameters ($1 the query, then limit/offset/minScore, then the filter's values);
 * the text is assembled from the validated config: quoted identifiers, the text search
 * configuration name (a config-only literal, because a GIN expression index is used only when
 * the query repeats the indexed expression exactly, constant included), the ranking function.
 */
import type { PostgresAdapterConfig } from '../config.js';
import type { SearchRequest } from '../backend.js';
import { compileFilter, type SqlDialect } from '../filter/compile.js';
import type { DeclaredField, FieldType, FilterScalar } from '../filter/types.js';
import { quoteIdentifier, quoteQualified } from '../sql/identifiers.js';

const CAST: Readonly<Record<FieldType, string>> = {
  keyword: 'text',
  text: 'text',
  int: 'bigint',
  float: 'double precision',
  bool: 'boolean',
  date: 'timestamptz',
};

export const postgresDialect: SqlDialect = {
  placeholder: (index, field, set) => `$${index}::${CAST[field.type]}${set ? '[]' : ''}`,
  column: (field: DeclaredField) => `d.${quoteIdentifier(field.column)}`,
  bind: (value: FilterScalar) => value,
  inSet: (column, param) => `${column} = ANY(${param})`,
  bindSet: (values) => [...values],
  listContains: (column, param) => `${param} = ANY(${column})`,
  textContains: (column, param) => `strpos(${column}, ${param}) > 0`,
  dateOperand: (sql) => sql,
};

/** `'english'::regconfig` — the name is checked against /^[a-z_]+$/ by the config schema. */
function regconfig(config: PostgresAdapterConfig): string {
  if (!/^[a-z_]{1,63}$/.test(config.search.language)) throw new Error(`invalid text search configuration ${config.search.language}`);
  return `'${config.search.language}'::regconfig`;
}

/** The document's tsvector: the stored column, or the expression an expression index would hold. */
export function vectorExpression(config: PostgresAdapterConfig): string {
  if (config.search.vector) return `d.${quoteIdentifier(config.search.vector)}`;
  const columns = searchedColumns(config).map((column) => `coalesce(d.${quoteIdentifier(column)}, '')`);
  return `to_tsvector(${regconfig(config)}, ${columns.join(` || ' ' || `)})`;
}

export function searchedColumns(config: PostgresAdapterConfig): string[] {
  return config.search.columns ?? [config.columns.title, config.columns.text].filter((c): c is string => c !== undefined);
}

/** The same expression without the `d.` alias, as `CREATE INDEX` would spell it. */
export function indexExpression(config: PostgresAdapterConfig): string {
  return vectorExpression(config).replaceAll('d."', '"');
}

/** The words as a web-search query: `a or b or c` (any) or `a b c` (all); websearch passes the raw text. */
export function tsQueryInput(config: PostgresAdapterConfig, request: SearchRequest): string {
  // U+0000 cannot be sent in a PostgreSQL text value; it is no word character anyway.
  if (config.search.match === 'websearch') return request.raw.replaceAll('\u0000', ' ');
  // `or` is the web-search OR keyword (and an English stopword): a query word "or" is dropped.
  const words = request.words.filter((word) => word !== 'or');
  return words.join(config.search.match === 'any' ? ' or ' : ' ');
}

export function selectList(config: PostgresAdapterConfig, request: SearchRequest, score: string): string {
  const { columns } = config;
  const items = [`d.${quoteIdentifier(columns.id)} AS rcp_id`, `${score} AS rcp_score`];
  if (request.includeText) items.push(`d.${quoteIdentifier(columns.text)} AS rcp_text`);
  if (columns.title) items.push(`d.${quoteIdentifier(columns.title)} AS rcp_title`);
  if (columns.uri) items.push(`d.${quoteIdentifier(columns.uri)} AS rcp_uri`);
  columns.meta.forEach((column, i) => items.push(`d.${quoteIdentifier(column)} AS rcp_meta_${i}`));
  return items.join(', ');
}

export function searchSql(config: PostgresAdapterConfig, request: SearchRequest): { sql: string; params: unknown[] } {
  const vector = vectorExpression(config);
  const score = `${config.search.ranking}(${vector}, q.query, ${config.search.normalization})`;
  const params: unknown[] = [tsQueryInput(config, request), request.limit, request.offset];
  const where = [`${vector} @@ q.query`];
  if (request.minScore !== undefined) {
    params.push(request.minScore);
    where.push(`${score} >= $${params.length}::double precision`);
  }
  if (request.filter) {
    const compiled = compileFilter(request.filter, postgresDialect, params.length + 1);
    params.push(...compiled.params);
    where.push(compiled.sql);
  }
  const sql = `SELECT ${selectList(config, request, score)}
FROM ${quoteQualified(config.table)} AS d CROSS JOIN (SELECT websearch_to_tsquery(${regconfig(config)}, $1::text) AS query) AS q
WHERE ${where.join(' AND ')}
ORDER BY rcp_score DESC, rcp_id ASC
LIMIT $2::bigint OFFSET $3::bigint`;
  return { sql, params };
}

/** The GIN indexes on the table, with their definitions, for the index check. */
export const GIN_INDEXES_SQL = `SELECT i.relname AS name, pg_get_indexdef(x.indexrelid) AS definition
FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_am a ON a.oid = i.relam
WHERE x.indrelid = to_regclass($1::text) AND a.amname = 'gin'`;
