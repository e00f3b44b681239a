/**
 * Builds an SQLite FTS5 database from documents: a content table (`id`, `title`, `text`, `uri`,
 * one column per metadata key) and an external-content FTS5 table over title and text with the
 * Porter stemmer. The file is written beside the target and renamed into place, so a server
 * opening it never sees half an index. Metadata columns are typeless (SQLite keeps each value's
 * own type); the field types seen are reported so the printed config can declare filters.
 */
import { renameSync, rmSync } from 'node:fs';
import type { FieldType } from '../filter/types.js';
import { quoteIdentifier } from '../sql/identifiers.js';

export interface IndexDocument {
  id: string;
  text: string;
  title?: string;
  uri?: string;
  meta: Record<string, unknown>;
}

export interface IndexSummary {
  documents: number;
  /** Filterable metadata fields with the type every value had (mixed or nested ones are meta only). */
  fields: Record<string, { type: FieldType; array: boolean }>;
  /** Metadata keys kept in no column (not an SQL identifier, or a reserved name). */
  skippedKeys: string[];
}

const RESERVED = new Set(['id', 'text', 'title', 'uri', 'rowid', 'oid', '_rowid_']);
const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;
const DATE = /^\d{4}-\d{2}-\d{2}([Tt ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?([Zz]|[+-]\d{2}:\d{2})?)?$/;

type Seen = 'int' | 'float' | 'bool' | 'date' | 'keyword' | 'list' | 'other';

function kindOf(value: unknown): Seen {
  if (typeof value === 'boolean') return 'bool';
  if (typeof value === 'number') return Number.isSafeInteger(value) ? 'int' : 'float';
  if (typeof value === 'string') return DATE.test(value) ? 'date' : 'keyword';
  if (Array.isArray(value) && value.every((item) => typeof item === 'string')) return 'list';
  return 'other';
}

/** SQLite stores these as they are; lists and objects as JSON text; booleans as 1/0. */
function storable(value: unknown): string | number | null {
  if (value === null || value === undefined) return null;
  if (typeof value === 'boolean') return Number(value);
  if (typeof value === 'number' || typeof value === 'string') return value;
  return JSON.stringify(value);
}

export async function buildFtsIndex(
  file: string,
  documents: AsyncIterable<IndexDocument> | Iterable<IndexDocument>,
  table = 'docs',
): Promise<IndexSummary> {
  const { default: Database } = await import('better-sqlite3');
  const temp = `${file}.building-${process.pid}`;
  rmSync(temp, { force: true });
  const db = new Database(temp);
  try {
    const summary = await fill(db, documents, table);
    db.close();
    renameSync(temp, file);
    return summary;
  } catch (err) {
    if (db.open) db.close();
    rmSync(temp, { force: true });
    throw err;
  }
}

async function fill(
  db: import('better-sqlite3').Database,
  documents: AsyncIterable<IndexDocument> | Iterable<IndexDocument>,
  table: string,
): Promise<IndexSummary> {
  const content = quoteIdentifier(table);
  const fts = quoteIdentifier(`${table}_fts`);
  db.pragma('journal_mode = OFF');
  db.exec(`CREATE TABLE ${content} (id TEXT NOT NULL UNIQUE, title TEXT, text TEXT NOT NULL, uri TEXT)`);
  const columns: string[] = [];
  const seen = new Map<string, Set<Seen>>();
  const skipped = new Set<string>();
  let insert = db.prepare(`INSERT OR REPLACE INTO ${content} (id, title, text, uri) VALUES (?, ?, ?, ?)`);
  let documentsSeen = 0;
  db.exec('BEGIN');
  for await (const doc of documents) {
    const keys = Object.keys(doc.meta).filter((key) => {
      const ok = IDENTIFIER.test(key) && !RESERVED.has(key.toLowerCase());
      if (!ok) skipped.add(key);
      return ok;
    });
    const added = keys.filter((key) => !columns.includes(key));
    if (added.length > 0) {
      for (const key of added) db.exec(`ALTER TABLE ${content} ADD COLUMN ${quoteIdentifier(key)}`);
      columns.push(...added);
      const names = ['id', 'title', 'text', 'uri', ...columns];
      insert = db.prepare(
        `INSERT OR REPLACE INTO ${content} (${names.map(quoteIdentifier).join(', ')}) VALUES (${names.map(() => '?').join(', ')})`,
      );
    }
    for (const key of keys) {
      if (doc.meta[key] === null) continue;
      const kinds = seen.get(key) ?? new Set<Seen>();
      kinds.add(kindOf(doc.meta[key]));
      seen.set(key, kinds);
    }
    insert.run(doc.id, doc.title ?? null, doc.text, doc.uri ?? null, ...columns.map((key) => storable(doc.meta[key])));
    documentsSeen += 1;
  }
  db.exec(`CREATE VIRTUAL TABLE ${fts} USING fts5(title, text, content=${content}, tokenize='porter unicode61 remove_diacritics 2')`);
  db.exec(`INSERT INTO ${fts}(${fts}) VALUES ('rebuild')`);
  db.exec('COMMIT');
  return { documents: documentsSeen, fields: fieldTypes(seen), skippedKeys: [...skipped].sort() };
}

function fieldTypes(seen: ReadonlyMap<string, ReadonlySet<Seen>>): IndexSummary['fields'] {
  const fields: IndexSummary['fields'] = {};
  for (const [key, kinds] of seen) {
    const only = (...allowed: Seen[]): boolean => [...kinds].every((kind) => allowed.includes(kind));
    if (only('int')) fields[key] = { type: 'int', array: false };
    else if (only('int', 'float')) fields[key] = { type: 'float', array: false };
    else if (only('bool')) fields[key] = { type: 'bool', array: false };
    else if (only('date')) fields[key] = { type: 'date', array: false };
    else if (only('keyword', 'date')) fields[key] = { type: 'keyword', array: false };
    else if (only('list')) fields[key] = { type: 'keyword', array: true };
  }
  return fields;
}
