/**
 * The PostgreSQL full-text backend: `websearch_to_tsquery` over the configured language, ranked
 * by `ts_rank_cd` (cover density; `ts_rank` on request), over a stored tsvector column or a
 * vector computed from columns. Its inspection says whether a GIN index serves the search.
 */
import type { AdapterBackend, InspectionNote, SearchRequest, SearchRow } from '../backend.js';
import { declaredFields, type PostgresAdapterConfig } from '../config.js';
import { createPgExecutor, type PgExecutor, type PgRow } from './executor.js';
import { GIN_INDEXES_SQL, indexExpression, postgresDialect, searchSql, searchedColumns, selectList, tsQueryInput } from './sql.js';
import { quoteIdentifier, quoteQualified } from '../sql/identifiers.js';

export function createPostgresBackend(config: PostgresAdapterConfig, baseDir: string): AdapterBackend {
  let executor: PgExecutor | undefined;
  const run = async (sql: string, params: readonly unknown[]): Promise<PgRow[]> => {
    executor ??= await createPgExecutor({
      connection: config.connection,
      baseDir,
      maxConnections: config.pool.max,
      statementTimeoutMs: config.pool.statementTimeoutMs,
      connectTimeoutMs: config.pool.connectTimeoutMs,
    });
    return executor.query(sql, params);
  };
  return {
    kind: 'postgres',
    scoreScale: 'unbounded',
    dialect: postgresDialect,
    async open() {
      // Every configured column must exist: a probe that returns no rows but names them all.
      const probe: SearchRequest = { words: [], raw: '', limit: 0, offset: 0, filter: undefined, minScore: undefined, includeText: true };
      const filterColumns = Object.values(declaredFields(config)).map((field) => postgresDialect.column(field));
      const columns = [selectList(config, probe, '0'), ...filterColumns, ...searchedColumns(config).map((c) => `d.${quoteIdentifier(c)}`)];
      await run(`SELECT ${columns.join(', ')} FROM ${quoteQualified(config.table)} AS d LIMIT 0`, []);
    },
    async search(request: SearchRequest): Promise<SearchRow[]> {
      if (tsQueryInput(config, request).trim() === '') return [];
      const { sql, params } = searchSql(config, request);
      const rows = await run(sql, params);
      return rows.map((row) => ({
        id: row.rcp_id,
        score: Number(row.rcp_score),
        text: row.rcp_text,
        title: row.rcp_title,
        uri: row.rcp_uri,
        meta: Object.fromEntries(config.columns.meta.map((column, i) => [column, row[`rcp_meta_${i}`]])),
      }));
    },
    async inspect(): Promise<InspectionNote[]> {
      const indexes = await run(GIN_INDEXES_SQL, [config.table]);
      const wanted = config.search.vector ? `(${quoteIdentifier(config.search.vector)})` : indexExpression(config);
      const match = indexes.find((index) => definitionUses(String(index.definition), wanted, config.search.vector));
      if (match) return [{ level: 'info', message: `GIN index ${String(match.name)} serves the full-text search` }];
      return [
        {
          level: 'warning',
          message: `no GIN index on ${config.table} matches the searched vector, so every search reads the whole table; create one with: CREATE INDEX ON ${quoteQualified(config.table)} USING gin (${config.search.vector ? quoteIdentifier(config.search.vector) : indexExpression(config)})`,
        },
      ];
    },
    async close() {
      await executor?.close();
      executor = undefined;
    },
  };
}

/** Whether an index definition (`pg_get_indexdef`) indexes the searched column or expression. */
function definitionUses(definition: string, wanted: string, vectorColumn: string | undefined): boolean {
  const normalise = (text: string): string =>
    text
      .replace(/::text/g, '')
      .replace(/[\s"()]/g, '')
      .toLowerCase();
  const body = definition.slice(definition.toLowerCase().indexOf('using gin') + 'using gin'.length);
  if (vectorColumn) return normalise(body).split(',').includes(vectorColumn.toLowerCase());
  return normalise(body).includes(normalise(wanted));
}
