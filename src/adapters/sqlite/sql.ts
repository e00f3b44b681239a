/**
 * SQLite FTS5 search as SQL text with `?` parameters, bound in text order: the MATCH expression,
 * minScore, the filter's values, limit, offset. Client text reaches FTS5 only as quoted strings
 * inside the bound MATCH expression, so it is never read as FTS5 query syntax (column filters,
 * NEAR, prefixes) either. Scores are `-bm25()`: FTS5's bm25 is negated BM25 (lower is better),
 * and it floors each term's idf at a tiny positive value, so the score is ≥ 0.
 */
import type { ColumnsConfig, SqliteAdapterConfig } from '../config.js';
import type { SearchRequest } from '../backend.js';
import { compileFilter, type SqlDialect } from '../filter/compile.js';
import type { DeclaredField, FilterScalar } from '../filter/types.js';
import { quoteIdentifier } from '../sql/identifiers.js';

/** SQLite binds no booleans: true/false are 1/0, as SQLite stores them. */
const bindScalar = (value: FilterScalar): string | number => (typeof value === 'boolean' ? Number(value) : value);

export const sqliteDialect: SqlDialect = {
  placeholder: () => '?',
  column: (field: DeclaredField) => `d.${quoteIdentifier(field.column)}`,
  bind: bindScalar,
  // The whole set is one JSON parameter, read back with json_each.
  inSet: (column, param, field) =>
    field.type === 'date'
      ? `julianday(${column}) IN (SELECT julianday(value) FROM json_each(${param}))`
      : `${column} IN (SELECT value FROM json_each(${param}))`,
  bindSet: (values) => JSON.stringify(values.map(bindScalar)),
  // CASE, not AND: json_each on a malformed value would fail the whole search.
  listContains: (column, param) =>
    `CASE WHEN json_valid(${column}) THEN EXISTS (SELECT 1 FROM json_each(${column}) WHERE value = ${param}) ELSE 0 END`,
  textContains: (column, param) => `instr(${column}, ${param}) > 0`,
  dateOperand: (sql) => `julianday(${sql})`,
};

/** `"word" OR "word"` (any) or `"word" "word"` (all, FTS5's implicit AND). */
export function matchExpression(words: readonly string[], match: 'any' | 'all'): string {
  return words.map((word) => `"${word.replaceAll('"', '""')}"`).join(match === 'any' ? ' OR ' : ' ');
}

export interface ResolvedSqlite {
  config: SqliteAdapterConfig;
  columns: ColumnsConfig;
  ftsTable: string;
}

function score(resolved: ResolvedSqlite, fts: string): string {
  // Weights are config numbers (checked finite, ≥ 0), written as numeric literals.
  const weights = (resolved.config.weights ?? []).map((w) => String(w));
  return `-bm25(${[fts, ...weights].join(', ')})`;
}

export function selectList(columns: ColumnsConfig, includeText: boolean, scoreSql: string): string {
  const items = [`d.${quoteIdentifier(columns.id)} AS rcp_id`, `${scoreSql} AS rcp_score`];
  if (includeText) items.push(`d.${quoteIdentifier(columns.text)} AS rcp_text`);
  if (columns.title) items.push(`d.${quoteIdentifier(columns.title)} AS rcp_title`);
  if (columns.uri) items.push(`d.${quoteIdentifier(columns.uri)} AS rcp_uri`);
  columns.meta.forEach((column, i) => items.push(`d.${quoteIdentifier(column)} AS rcp_meta_${i}`));
  return items.join(', ');
}

/** FROM clause: the FTS5 table joined to its content table on rowid (or the FTS5 table alone). */
export function fromClause(resolved: ResolvedSqlite): { from: string; fts: string } {
  const table = resolved.config.table;
  if (resolved.ftsTable === table) return { from: `${quoteIdentifier(table)} AS d`, fts: 'd' };
  const fts = quoteIdentifier(resolved.ftsTable);
  return { from: `${fts} JOIN ${quoteIdentifier(table)} AS d ON d.rowid = ${fts}.rowid`, fts };
}

export function searchSql(resolved: ResolvedSqlite, request: SearchRequest): { sql: string; params: unknown[] } {
  const { from, fts } = fromClause(resolved);
  const scoreSql = score(resolved, fts);
  const params: unknown[] = [matchExpression(request.words, resolved.config.match)];
  const where = [`${fts} MATCH ?`];
  if (request.minScore !== undefined) {
    params.push(request.minScore);
    where.push(`${scoreSql} >= ?`);
  }
  if (request.filter) {
    const compiled = compileFilter(request.filter, sqliteDialect, params.length + 1);
    params.push(...compiled.params);
    where.push(compiled.sql);
  }
  params.push(request.limit, request.offset);
  const sql = `SELECT ${selectList(resolved.columns, request.includeText, scoreSql)}
FROM ${from}
WHERE ${where.join(' AND ')}
ORDER BY rcp_score DESC, rcp_id ASC
LIMIT ? OFFSET ?`;
  return { sql, params };
}
