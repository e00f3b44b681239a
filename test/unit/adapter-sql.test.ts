/**
 * §15.4 at the SQL level: for both dialects, the statement text depends only on the config and
 * the filter's shape. Every hostile value yields byte-identical SQL to a benign one and appears
 * only among the bound parameters.
 */
import { describe, expect, it } from 'vitest';
import { parseAdapterConfig } from '../../src/adapters/open.js';
import { declaredFields, type PostgresAdapterConfig, type SqliteAdapterConfig } from '../../src/adapters/config.js';
import { validateFilter } from '../../src/adapters/filter/validate.js';
import { advertisedOperators } from '../../src/adapters/filter/types.js';
import { searchSql as postgresSql } from '../../src/adapters/postgres/sql.js';
import { searchSql as sqliteSql } from '../../src/adapters/sqlite/sql.js';
import type { SearchRequest } from '../../src/adapters/backend.js';
import { queryWords } from '../../src/adapters/query-text.js';
import { FILTERS, HOSTILE_STRINGS } from '../adapters/fixtures.js';

const pgConfig = parseAdapterConfig({
  kind: 'postgres',
  connection: { url: 'postgres://x' },
  table: 'docs',
  columns: { id: 'id', text: 'body', title: 'title' },
  filters: FILTERS,
}) as PostgresAdapterConfig;
const sqliteConfig = parseAdapterConfig({ kind: 'sqlite', path: 'x.db', filters: FILTERS }) as SqliteAdapterConfig;
const fields = declaredFields(pgConfig);
const operators = advertisedOperators(fields);

function request(query: string, value: string): SearchRequest {
  const filter = validateFilter(
    {
      and: [
        { field: 'lang', op: 'eq', value },
        { field: 'summary', op: 'contains', value },
        { field: 'tags', op: 'contains', value },
        { field: 'lang', op: 'in', value: [value, 'en'] },
        { not: { field: 'lang', op: 'ne', value } },
      ],
    },
    fields,
    operators,
  );
  return { words: queryWords(query).words, raw: query, limit: 11, offset: 0, filter, minScore: undefined, includeText: true };
}

const dialects = [
  { name: 'postgres', build: (r: SearchRequest) => postgresSql(pgConfig, r) },
  {
    name: 'sqlite',
    build: (r: SearchRequest) =>
      sqliteSql({ config: sqliteConfig, columns: { id: 'id', text: 'text', title: 'title', meta: [] }, ftsTable: 'docs_fts' }, r),
  },
];

describe.each(dialects)('$name SQL', ({ build }) => {
  const benign = build(request('wing', 'en'));

  it('is identical for every hostile value, which travels only as a parameter', () => {
    for (const value of HOSTILE_STRINGS) {
      const built = build(request(value, value));
      expect(built.sql).toBe(benign.sql);
      expect(built.params.length).toBe(benign.params.length);
      if (value.length > 2) expect(built.sql.includes(value)).toBe(false);
      expect(
        built.params.some(
          (param) =>
            param === value ||
            (typeof param === 'string' && param.includes(JSON.stringify(value).slice(1, -1))) ||
            (Array.isArray(param) && param.includes(value)),
        ),
      ).toBe(true);
    }
  });

  it('changes only with the filter shape, never with set sizes (a set is one parameter)', () => {
    const small = validateFilter({ field: 'year', op: 'in', value: [1] }, fields, operators);
    const large = validateFilter({ field: 'year', op: 'in', value: Array.from({ length: 1_000 }, (_, i) => i) }, fields, operators);
    const base: SearchRequest = {
      words: ['wing'],
      raw: 'wing',
      limit: 11,
      offset: 0,
      filter: small,
      minScore: undefined,
      includeText: true,
    };
    expect(build({ ...base, filter: large }).sql).toBe(build(base).sql);
  });
});

describe('query words', () => {
  // U+02BC is a modifier letter (Unicode Lm), so it is a word of its own; the emoji is not.
  it('keeps letters and digits only, so no query syntax reaches the full-text parser', () => {
    expect(queryWords(`title:wing NEAR("lift" -drag) OR 1=1; -- ʼ 😀 Flügel`).words).toEqual([
      'title',
      'wing',
      'near',
      'lift',
      'drag',
      'or',
      '1',
      'ʼ',
      'flügel',
    ]);
  });
});
