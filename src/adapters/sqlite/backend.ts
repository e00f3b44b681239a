/**
 * The SQLite FTS5 backend (better-sqlite3): a database file opened read-only, searched with
 * MATCH and ranked by bm25(). Statements are prepared once per distinct SQL text (the text
 * depends only on the filter's shape, never on its values).
 */
import { resolve } from 'node:path';
import type BetterSqlite3 from 'better-sqlite3';
import { ErrorCode, RcpError } from '../../core/protocol/errors.js';
import type { AdapterBackend, InspectionNote, SearchRequest, SearchRow } from '../backend.js';
import { declaredFields, type ColumnsConfig, type SqliteAdapterConfig } from '../config.js';
import { quoteIdentifier } from '../sql/identifiers.js';
import type { DeclaredField } from '../filter/types.js';
import { fromClause, searchSql, selectList, sqliteDialect, type ResolvedSqlite } from './sql.js';

type Row = Record<string, unknown>;
const STATEMENT_CACHE_SIZE = 128;

export function createSqliteBackend(config: SqliteAdapterConfig, baseDir: string): AdapterBackend {
  const file = resolve(baseDir, config.path);
  let db: BetterSqlite3.Database | undefined;
  let resolved: ResolvedSqlite | undefined;
  const statements = new Map<string, BetterSqlite3.Statement>();
  // A meta column that is also a declared field is returned as that field's type.
  const metaFields = new Map(Object.values(declaredFields(config)).map((field) => [field.column, field]));

  const prepared = (sql: string): BetterSqlite3.Statement => {
    let statement = statements.get(sql);
    if (!statement) {
      if (statements.size >= STATEMENT_CACHE_SIZE) statements.delete(statements.keys().next().value!);
      statement = db!.prepare(sql);
      statements.set(sql, statement);
    }
    return statement;
  };

  return {
    kind: 'sqlite',
    scoreScale: 'bm25',
    dialect: sqliteDialect,
    async open() {
      const { default: Database } = await import('better-sqlite3');
      try {
        db = new Database(file, { readonly: true, fileMustExist: true });
        resolved = {
          config,
          columns: config.columns ?? defaultColumns(db, config.table),
          ftsTable: config.ftsTable ?? `${config.table}_fts`,
        };
        // Preparing a statement that names every configured column checks they all exist.
        const { from, fts } = fromClause(resolved);
        const filterColumns = Object.values(declaredFields(config)).map((field) => sqliteDialect.column(field));
        db.prepare(
          `SELECT ${[selectList(resolved.columns, true, `-bm25(${fts})`), ...filterColumns].join(', ')} FROM ${from} WHERE ${fts} MATCH ? LIMIT 0`,
        );
      } catch (err) {
        db?.close();
        db = undefined;
        throw new Error(`sqlite adapter: ${file}: ${(err as Error).message}`);
      }
    },
    async search(request: SearchRequest): Promise<SearchRow[]> {
      if (!db || !resolved) throw new RcpError(ErrorCode.BackendUnavailable, 'the database is not open', { retryable: true });
      if (request.words.length === 0) return [];
      const { sql, params } = searchSql(resolved, request);
      const columns = resolved.columns;
      try {
        const rows = prepared(sql).all(...params) as Row[];
        return rows.map((row) => ({
          id: row.rcp_id,
          score: Number(row.rcp_score),
          text: row.rcp_text,
          title: row.rcp_title,
          uri: row.rcp_uri,
          meta: Object.fromEntries(columns.meta.map((column, i) => [column, decode(row[`rcp_meta_${i}`], metaFields.get(column))])),
        }));
      } catch (err) {
        throw toRcpError(err);
      }
    },
    async inspect(): Promise<InspectionNote[]> {
      if (!db || !resolved) return [{ level: 'warning', message: `${file} is not open` }];
      const count = db.prepare(`SELECT count(*) AS n FROM ${quoteIdentifier(config.table)}`).get() as { n: number };
      return [{ level: 'info', message: `FTS5 table ${resolved.ftsTable} over ${count.n} documents in ${file}` }];
    },
    async close() {
      statements.clear();
      db?.close();
      db = undefined;
    },
  };
}

/** `id`, `text`, and `title`/`uri` when present; every other column is meta. */
function defaultColumns(db: BetterSqlite3.Database, table: string): ColumnsConfig {
  const names = (db.prepare(`SELECT name FROM pragma_table_info(?)`).all(table) as Array<{ name: string }>).map((row) => row.name);
  if (names.length === 0) throw new Error(`no table ${table}`);
  const has = (name: string): string | undefined => (names.includes(name) ? name : undefined);
  const core = new Set(['id', 'text', 'title', 'uri']);
  return {
    id: 'id',
    text: 'text',
    title: has('title'),
    uri: has('uri'),
    meta: names.filter((name) => !core.has(name) && /^[A-Za-z_][A-Za-z0-9_]{0,62}$/.test(name)),
  };
}

/** SQLite stores lists as JSON text and booleans as 1/0; give them back as JSON lists and booleans. */
function decode(value: unknown, field: DeclaredField | undefined): unknown {
  if (field?.array && typeof value === 'string') {
    try {
      return JSON.parse(value) as unknown;
    } catch {
      return value;
    }
  }
  if (field?.type === 'bool' && (value === 0 || value === 1)) return value === 1;
  return value;
}

function toRcpError(err: unknown): RcpError {
  const code = typeof err === 'object' && err !== null ? String((err as { code?: unknown }).code ?? '') : '';
  if (/^SQLITE_(BUSY|LOCKED|CANTOPEN|IOERR|CORRUPT|NOTADB|FULL)/.test(code)) {
    return new RcpError(ErrorCode.BackendUnavailable, 'the database is unavailable', { retryable: true, detail: code });
  }
  return new RcpError(ErrorCode.InternalError, 'the database rejected the search', code ? { detail: code } : undefined);
}
