/**
 * The bundled Cranfield collection as an SQLite FTS5 database, for the embedded default's third
 * engine: built on first use from data/cranfield into a cache file (under a second on one core),
 * then reused. Title and abstract are indexed; author and bibliography are metadata.
 */
import { existsSync, mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { loadCranfieldDocs } from '../bm25/corpus.js';
import { buildFtsIndex, type IndexDocument } from '../../adapters/sqlite/index-builder.js';

export function cranfieldIndexDocuments(dataDir?: string): IndexDocument[] {
  return loadCranfieldDocs(dataDir).map((doc) => ({
    id: doc.id,
    title: doc.title,
    text: doc.body,
    meta: { author: doc.author, bibliography: doc.bibliography },
  }));
}

/** Build the database at `file` unless it exists; resolves to true when it was built now. */
export async function ensureCranfieldSqlite(file: string, dataDir?: string): Promise<boolean> {
  if (existsSync(file)) return false;
  mkdirSync(dirname(file), { recursive: true });
  await buildFtsIndex(file, cranfieldIndexDocuments(dataDir));
  return true;
}
