/**
 * The adapter config: what database, which table and columns, which fields clients may filter
 * on. One shape serves the standalone server (`rcp-gateway adapter <kind> --config FILE`) and an
 * in-process engine entry. Strings may use `${ENV}` (interpolated by the config loader), which is
 * how connection secrets stay out of the file.
 */
import { z } from 'zod';
import { FIELD_TYPES, type DeclaredFields } from './filter/types.js';
import { identifierSchema, qualifiedNameSchema } from './sql/identifiers.js';

const FieldSchema = z.union([
  z.enum(FIELD_TYPES),
  z.strictObject({
    /** The column behind the field; defaults to the field's name. */
    column: identifierSchema.optional(),
    type: z.enum(FIELD_TYPES),
    /** The column holds a list: PostgreSQL array, SQLite JSON array text. */
    array: z.boolean().default(false),
  }),
]);

/** Where each part of a hit comes from. */
export const ColumnsSchema = z.strictObject({
  id: identifierSchema,
  text: identifierSchema,
  title: identifierSchema.optional(),
  uri: identifierSchema.optional(),
  /** Columns returned in `hit.meta` under their own names. */
  meta: z.array(identifierSchema).default([]),
});
export type ColumnsConfig = z.infer<typeof ColumnsSchema>;

const common = {
  /** `server.name` in initialize/info; defaults to `<kind>:<table>`. */
  name: z.string().min(1).optional(),
  /** `citation.source` prefix (`<source>:<id>`); defaults to the name. */
  source: z.string().min(1).optional(),
  maxK: z.int().min(1).max(1_000).default(100),
  /** Field name → type (column = field name) or {column, type, array}. */
  filters: z.record(identifierSchema, FieldSchema).default({}),
  /** Deepest rank pagination reads; past it the result set ends (§15.5: OFFSET costs grow with depth). */
  maxDepth: z.int().min(1).default(10_000),
};

const PgConnectionSchema = z.union([
  z.strictObject({ url: z.string().min(1) }),
  z.strictObject({
    host: z.string().min(1).default('127.0.0.1'),
    port: z.int().min(1).max(65_535).default(5432),
    user: z.string().min(1).optional(),
    password: z.string().optional(),
    database: z.string().min(1).optional(),
  }),
  /** Embedded PostgreSQL (PGlite, WASM): a data folder, or `memory://` for a throwaway database. */
  z.strictObject({ pglite: z.string().min(1) }),
]);
export type PgConnection = z.infer<typeof PgConnectionSchema>;

export const PostgresAdapterSchema = z.strictObject({
  kind: z.literal('postgres'),
  ...common,
  connection: PgConnectionSchema,
  table: qualifiedNameSchema,
  columns: ColumnsSchema,
  search: z
    .strictObject({
      /** A text search configuration name (`english`, `simple`, `german`, …). */
      language: z
        .string()
        .regex(/^[a-z_]{1,63}$/, 'expected a text search configuration name such as "english"')
        .default('english'),
      /** A stored tsvector column; otherwise the vector is computed from `columns`. */
      vector: identifierSchema.optional(),
      /** Columns concatenated into the computed vector (default: title and text). */
      columns: z.array(identifierSchema).min(1).optional(),
      /** `any`: a document matching any query word qualifies; `all`: every word; `websearch`: the raw query in web-search syntax. */
      match: z.enum(['any', 'all', 'websearch']).default('any'),
      ranking: z.enum(['ts_rank_cd', 'ts_rank']).default('ts_rank_cd'),
      /** The ranking functions' normalization bit mask (0 = none). */
      normalization: z.int().min(0).max(63).default(0),
    })
    .default({ language: 'english', match: 'any', ranking: 'ts_rank_cd', normalization: 0 }),
  pool: z
    .strictObject({
      max: z.int().min(1).max(100).default(4),
      /** statement_timeout for every search. */
      statementTimeoutMs: z.int().min(1).default(10_000),
      connectTimeoutMs: z.int().min(1).default(5_000),
    })
    .default({ max: 4, statementTimeoutMs: 10_000, connectTimeoutMs: 5_000 }),
});
export type PostgresAdapterConfig = z.infer<typeof PostgresAdapterSchema>;

export const SqliteAdapterSchema = z.strictObject({
  kind: z.literal('sqlite'),
  ...common,
  /** The database file (relative paths resolve against the config file's folder). */
  path: z.string().min(1),
  /** The content table (one row per document). */
  table: identifierSchema.default('docs'),
  /** The FTS5 table whose rowid is the content table's rowid; default `<table>_fts`. */
  ftsTable: identifierSchema.optional(),
  /** Absent: `id` and `text`, `title`/`uri` when the table has them, every other column as meta. */
  columns: ColumnsSchema.optional(),
  match: z.enum(['any', 'all']).default('any'),
  /** bm25() column weights, in the FTS5 table's column order. */
  weights: z.array(z.number().finite().min(0)).optional(),
  /**
   * When the file does not exist, build it first (as `adapter sqlite --index` does): from JSON
   * lines files/folders (relative to the config file), or from the bundled Cranfield collection.
   */
  seed: z.union([z.literal('cranfield'), z.array(z.string().min(1)).min(1)]).optional(),
});
export type SqliteAdapterConfig = z.infer<typeof SqliteAdapterSchema>;

export const AdapterConfigSchema = z.discriminatedUnion('kind', [PostgresAdapterSchema, SqliteAdapterSchema]);
export type AdapterConfig = z.infer<typeof AdapterConfigSchema>;
export const ADAPTER_KINDS = ['postgres', 'sqlite'] as const;
export type AdapterKind = (typeof ADAPTER_KINDS)[number];

/** The declared filter fields with their defaults filled in. */
export function declaredFields(config: AdapterConfig): DeclaredFields {
  const fields: Record<string, DeclaredFields[string]> = {};
  for (const [name, spec] of Object.entries(config.filters)) {
    fields[name] =
      typeof spec === 'string'
        ? { column: name, type: spec, array: false }
        : { column: spec.column ?? name, type: spec.type, array: spec.array };
  }
  return fields;
}

export function adapterName(config: AdapterConfig): string {
  return config.name ?? `${config.kind}:${config.table}`;
}
