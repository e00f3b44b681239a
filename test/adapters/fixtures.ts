/**
 * One small document set for every adapter test: the same six documents go into SQLite (through
 * `adapter sqlite --index`) and PostgreSQL (through parameterised INSERTs), so filter cases and
 * their expected ids hold for both. Every document mentions "wing"; d5 has no metadata at all.
 */
export interface FixtureDoc {
  id: string;
  title: string;
  text: string;
  uri: string;
  lang: string | null;
  year: number | null;
  rating: number | null;
  open: boolean | null;
  published: string | null;
  tags: string[] | null;
  summary: string | null;
}

export const DOCS: readonly FixtureDoc[] = [
  {
    id: 'd1',
    title: 'Swept wing lift',
    text: 'The swept wing lift study measures lift on a wing.',
    uri: 'https://example.org/d1',
    lang: 'en',
    year: 2019,
    rating: 4.5,
    open: true,
    published: '2019-03-01T00:00:00Z',
    tags: ['news', 'blog'],
    summary: "Quick wing test; O'Brien's notes",
  },
  {
    id: 'd2',
    title: 'Aile et portance',
    text: 'A wing section in French tunnels.',
    uri: 'https://example.org/d2',
    lang: 'fr',
    year: 2020,
    rating: 3.0,
    open: false,
    published: '2020-06-15T12:00:00Z',
    tags: ['blog'],
    summary: "aile d'avion -- commentaire",
  },
  {
    id: 'd3',
    title: 'Delta wing vortices',
    text: 'Vortex lift over a delta wing at high angle of attack.',
    uri: 'https://example.org/d3',
    lang: 'en',
    year: 2021,
    rating: 1.5,
    open: true,
    published: '2021-01-01T00:00:00Z',
    tags: [],
    summary: 'wing 100% done',
  },
  {
    id: 'd4',
    title: 'Flügel im Windkanal',
    text: 'Wing flutter measured in a wind tunnel.',
    uri: 'https://example.org/d4',
    lang: 'de',
    year: 2022,
    rating: 5.0,
    open: false,
    published: '2022-12-31T23:59:59Z',
    tags: ['news'],
    summary: 'Flügel 😀 unicode',
  },
  {
    id: 'd5',
    title: 'Untitled wing note',
    text: 'A wing note with no metadata.',
    uri: 'https://example.org/d5',
    lang: null,
    year: null,
    rating: null,
    open: null,
    published: null,
    tags: null,
    summary: null,
  },
  {
    id: 'd6',
    title: 'Wing box structure',
    text: 'Structural wing box design loads.',
    uri: 'https://example.org/d6',
    lang: 'en',
    year: 2023,
    rating: 2.5,
    open: true,
    published: '2023-07-04T00:00:00Z',
    tags: ['paper'],
    summary: 'DROP TABLE docs; --',
  },
];

/** The filter fields both adapters declare over the fixture. */
export const FILTERS = {
  lang: 'keyword',
  year: 'int',
  rating: 'float',
  open: 'bool',
  published: 'date',
  tags: { type: 'keyword', array: true },
  summary: 'text',
} as const;

/** JSON lines for `adapter sqlite --index`. */
export function fixtureJsonl(): string {
  return DOCS.map(({ id, title, text, uri, ...meta }) => JSON.stringify({ id, title, text, uri, ...meta })).join('\n') + '\n';
}

/** Every §8 operator on every applicable field type, with the ids it must select. */
export const FILTER_CASES: ReadonlyArray<{ name: string; filter: unknown; ids: string[] }> = [
  { name: 'keyword eq', filter: { field: 'lang', op: 'eq', value: 'en' }, ids: ['d1', 'd3', 'd6'] },
  { name: 'keyword ne (absent counts as not equal)', filter: { field: 'lang', op: 'ne', value: 'en' }, ids: ['d2', 'd4', 'd5'] },
  { name: 'int gt', filter: { field: 'year', op: 'gt', value: 2020 }, ids: ['d3', 'd4', 'd6'] },
  { name: 'int gte', filter: { field: 'year', op: 'gte', value: 2020 }, ids: ['d2', 'd3', 'd4', 'd6'] },
  { name: 'int lt', filter: { field: 'year', op: 'lt', value: 2020 }, ids: ['d1'] },
  { name: 'int lte', filter: { field: 'year', op: 'lte', value: 2020 }, ids: ['d1', 'd2'] },
  { name: 'int eq', filter: { field: 'year', op: 'eq', value: 2022 }, ids: ['d4'] },
  { name: 'float gt', filter: { field: 'rating', op: 'gt', value: 2.9 }, ids: ['d1', 'd2', 'd4'] },
  { name: 'float lte', filter: { field: 'rating', op: 'lte', value: 2.5 }, ids: ['d3', 'd6'] },
  { name: 'bool eq true', filter: { field: 'open', op: 'eq', value: true }, ids: ['d1', 'd3', 'd6'] },
  { name: 'bool eq false', filter: { field: 'open', op: 'eq', value: false }, ids: ['d2', 'd4'] },
  { name: 'bool ne true', filter: { field: 'open', op: 'ne', value: true }, ids: ['d2', 'd4', 'd5'] },
  { name: 'date gte (RFC 3339)', filter: { field: 'published', op: 'gte', value: '2021-01-01T00:00:00Z' }, ids: ['d3', 'd4', 'd6'] },
  { name: 'date lt (epoch ms)', filter: { field: 'published', op: 'lt', value: Date.parse('2020-01-01T00:00:00Z') }, ids: ['d1'] },
  { name: 'date eq (date only, UTC)', filter: { field: 'published', op: 'eq', value: '2021-01-01' }, ids: ['d3'] },
  { name: 'date gt (offset)', filter: { field: 'published', op: 'gt', value: '2022-12-31T23:59:58-00:00' }, ids: ['d4', 'd6'] },
  { name: 'keyword in', filter: { field: 'lang', op: 'in', value: ['en', 'de'] }, ids: ['d1', 'd3', 'd4', 'd6'] },
  { name: 'keyword nin (absent counts as outside)', filter: { field: 'lang', op: 'nin', value: ['en', 'de'] }, ids: ['d2', 'd5'] },
  { name: 'int in', filter: { field: 'year', op: 'in', value: [2019, 2023] }, ids: ['d1', 'd6'] },
  {
    name: 'date in',
    filter: { field: 'published', op: 'in', value: ['2021-01-01T00:00:00Z', Date.parse('2019-03-01T00:00:00Z')] },
    ids: ['d1', 'd3'],
  },
  { name: 'bool in', filter: { field: 'open', op: 'in', value: [false] }, ids: ['d2', 'd4'] },
  { name: 'list contains', filter: { field: 'tags', op: 'contains', value: 'news' }, ids: ['d1', 'd4'] },
  { name: 'text contains (quote)', filter: { field: 'summary', op: 'contains', value: "O'Brien" }, ids: ['d1'] },
  { name: 'text contains (SQL comment)', filter: { field: 'summary', op: 'contains', value: '--' }, ids: ['d2', 'd6'] },
  { name: 'text contains (% is no wildcard)', filter: { field: 'summary', op: 'contains', value: '%' }, ids: ['d3'] },
  { name: 'text contains (_ is no wildcard)', filter: { field: 'summary', op: 'contains', value: '_' }, ids: [] },
  { name: 'text contains (unicode)', filter: { field: 'summary', op: 'contains', value: '😀' }, ids: ['d4'] },
  { name: 'text contains is case-sensitive', filter: { field: 'summary', op: 'contains', value: 'drop table' }, ids: [] },
  { name: 'exists true', filter: { field: 'lang', op: 'exists', value: true }, ids: ['d1', 'd2', 'd3', 'd4', 'd6'] },
  { name: 'exists false', filter: { field: 'lang', op: 'exists', value: false }, ids: ['d5'] },
  { name: 'list exists false (an empty list exists)', filter: { field: 'tags', op: 'exists', value: false }, ids: ['d5'] },
  { name: 'not', filter: { not: { field: 'lang', op: 'eq', value: 'en' } }, ids: ['d2', 'd4', 'd5'] },
  {
    name: 'or',
    filter: {
      or: [
        { field: 'year', op: 'lt', value: 2020 },
        { field: 'tags', op: 'contains', value: 'paper' },
      ],
    },
    ids: ['d1', 'd6'],
  },
  {
    name: 'and',
    filter: {
      and: [
        { field: 'lang', op: 'eq', value: 'en' },
        { field: 'open', op: 'eq', value: true },
        { field: 'year', op: 'gte', value: 2021 },
      ],
    },
    ids: ['d3', 'd6'],
  },
  {
    name: 'nested',
    filter: {
      and: [
        {
          or: [
            { field: 'lang', op: 'eq', value: 'fr' },
            { field: 'lang', op: 'eq', value: 'de' },
          ],
        },
        { not: { field: 'rating', op: 'lt', value: 4 } },
      ],
    },
    ids: ['d4'],
  },
];

/** Filters every adapter must refuse, with the code and the `error.data` it must carry. */
export const REJECTED_FILTERS: ReadonlyArray<{ name: string; filter: unknown; code: number; data: Record<string, string> }> = [
  { name: 'unknown field', filter: { field: 'nope', op: 'eq', value: 'x' }, code: -32602, data: { field: 'filter.nope' } },
  {
    name: 'field named like SQL',
    filter: { field: 'lang; DROP TABLE docs', op: 'eq', value: 'x' },
    code: -32602,
    data: { field: 'filter.lang; DROP TABLE docs' },
  },
  {
    name: 'prototype key as field',
    filter: { field: '__proto__', op: 'eq', value: 'x' },
    code: -32602,
    data: { field: 'filter.__proto__' },
  },
  {
    name: 'constructor as field',
    filter: { field: 'constructor', op: 'eq', value: 'x' },
    code: -32602,
    data: { field: 'filter.constructor' },
  },
  { name: 'string for int', filter: { field: 'year', op: 'eq', value: '2020' }, code: -32602, data: { field: 'filter.year' } },
  { name: 'fraction for int', filter: { field: 'year', op: 'eq', value: 2020.5 }, code: -32602, data: { field: 'filter.year' } },
  { name: 'string for bool', filter: { field: 'open', op: 'eq', value: 'true' }, code: -32602, data: { field: 'filter.open' } },
  {
    name: 'not a timestamp',
    filter: { field: 'published', op: 'gte', value: 'yesterday' },
    code: -32602,
    data: { field: 'filter.published' },
  },
  {
    name: 'SQL as a timestamp',
    filter: { field: 'published', op: 'gte', value: "2020-01-01'; DROP TABLE docs; --" },
    code: -32602,
    data: { field: 'filter.published' },
  },
  { name: 'ordered op on keyword', filter: { field: 'lang', op: 'gt', value: 'a' }, code: -32602, data: { field: 'filter.lang' } },
  { name: 'eq on a list field', filter: { field: 'tags', op: 'eq', value: 'news' }, code: -32602, data: { field: 'filter.tags' } },
  { name: 'contains on keyword', filter: { field: 'lang', op: 'contains', value: 'e' }, code: -32602, data: { field: 'filter.lang' } },
  { name: 'no such operator', filter: { field: 'lang', op: 'like', value: '%' }, code: -32602, data: { field: 'filter.op' } },
  { name: 'object as value', filter: { field: 'lang', op: 'eq', value: { $ne: null } }, code: -32602, data: { field: 'filter.lang' } },
  { name: 'in without a list', filter: { field: 'lang', op: 'in', value: 'en' }, code: -32602, data: { field: 'filter.lang' } },
  { name: 'empty in', filter: { field: 'lang', op: 'in', value: [] }, code: -32602, data: { field: 'filter.lang' } },
  {
    name: 'oversized in',
    filter: { field: 'year', op: 'in', value: Array.from({ length: 2_000 }, (_, i) => i) },
    code: -32602,
    data: { field: 'filter.year' },
  },
  { name: 'NUL in a value', filter: { field: 'lang', op: 'eq', value: 'en\u0000' }, code: -32602, data: { field: 'filter.lang' } },
  { name: 'exists with a string', filter: { field: 'lang', op: 'exists', value: 'yes' }, code: -32602, data: { field: 'filter.lang' } },
  { name: 'empty and', filter: { and: [] }, code: -32602, data: { field: 'filter.and' } },
  {
    name: 'two combinators',
    filter: { and: [{ field: 'lang', op: 'eq', value: 'en' }], or: [{ field: 'lang', op: 'eq', value: 'fr' }] },
    code: -32602,
    data: { field: 'filter' },
  },
  { name: 'not a clause', filter: 'lang = en', code: -32602, data: { field: 'filter' } },
  {
    name: 'too deep',
    filter: Array.from({ length: 40 }).reduce<unknown>((inner) => ({ not: inner }), { field: 'lang', op: 'eq', value: 'en' }),
    code: -32602,
    data: {},
  },
];

/** Hostile strings: each one as a keyword value must select nothing and leave the table intact. */
export const HOSTILE_STRINGS: readonly string[] = [
  "' OR 1=1 --",
  "'; DROP TABLE docs; --",
  '" OR ""="',
  "en' --",
  "x') OR ('1'='1",
  '\\',
  "\\'; SELECT pg_sleep(5); --",
  '%',
  '_',
  '*',
  '/* comment */ en',
  '-- comment',
  '#',
  ';',
  '$1',
  '?',
  ':name',
  '@p',
  '?1',
  'NEAR(wing lift)',
  'title:wing',
  'wing*',
  '"wing"',
  '^wing',
  'wing AND lift',
  '{"$ne": null}',
  '\u202Een',
  'ｅｎ',
  'e\u0301n',
  '😀',
  'ʼ OR 1=1',
  '\r\n',
  '\t',
  'en\n',
  'a'.repeat(100_000),
];
