/**
 * Loader for the Cranfield test collection bundled at `<repo>/data/cranfield/`.
 *
 * The data directory is found by walking up from this module's own directory
 * (`import.meta.url`) until `data/cranfield/cran_docs.json` exists, so the same
 * code works when run from `src/` (vitest) and from the compiled `dist/src/`
 * tree, and when the package is installed elsewhere (the `files` list of
 * package.json ships `data/`). Nothing here reads outside the repository.
 *
 * Every file is validated with zod on load: the JSON is untrusted input as far
 * as types go (doc ids are numbers in the JSON and are stringified here).
 * Loaded collections are cached per data directory.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';

/** One Cranfield abstract. `id` is the stringified numeric id of the JSON. */
export interface CranDoc {
  id: string;
  title: string;
  body: string;
  author: string;
  bibliography: string;
}

/** One Cranfield query; `id` is the stringified `"query number"` (1..225). */
export interface CranQuery {
  id: string;
  text: string;
}

/**
 * One relevance judgement. `position` is Cranfield's grade:
 * 1 = complete answer … 4 = minimum interest (see data/cranfield/README.txt).
 * Non-relevant pairs are not listed in the collection.
 */
export interface CranQrel {
  queryId: string;
  docId: string;
  position: 1 | 2 | 3 | 4;
}

const RELATIVE_MARKER = join('data', 'cranfield', 'cran_docs.json');

/**
 * Walks up from `startDir` (default: this module's directory) to the first
 * ancestor holding `data/cranfield/cran_docs.json`, and returns that
 * `…/data/cranfield` directory. Throws a precise error when none is found.
 */
export function findCranfieldDir(startDir: string = dirname(fileURLToPath(import.meta.url))): string {
  let dir = resolve(startDir);
  for (;;) {
    if (existsSync(join(dir, RELATIVE_MARKER))) return join(dir, 'data', 'cranfield');
    const parent = dirname(dir);
    if (parent === dir) {
      throw new Error(`Cranfield data not found: no ancestor of ${startDir} contains ${RELATIVE_MARKER}`);
    }
    dir = parent;
  }
}

const idSchema = z.union([z.number().int().nonnegative(), z.string().regex(/^\d+$/)]).transform(String);

const docsSchema = z.array(
  z.object({
    id: idSchema,
    title: z.string(),
    body: z.string(),
    author: z.string().default(''),
    bibliography: z.string().default(''),
  }),
);

const queriesSchema = z.array(
  z.object({
    'query number': idSchema,
    query: z.string(),
  }),
);

const qrelsSchema = z.array(
  z.object({
    query_num: idSchema,
    id: idSchema,
    position: z.union([z.literal(1), z.literal(2), z.literal(3), z.literal(4)]),
  }),
);

function readJson(dir: string, file: string): unknown {
  const path = join(dir, file);
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as unknown;
  } catch (err) {
    throw new Error(`cannot read Cranfield file ${path}: ${err instanceof Error ? err.message : String(err)}`);
  }
}

function parseWith<T>(schema: z.ZodType<T>, dir: string, file: string): T {
  const result = schema.safeParse(readJson(dir, file));
  if (!result.success) {
    const issue = result.error.issues[0];
    const where = issue ? `${issue.path.join('.')}: ${issue.message}` : 'invalid';
    throw new Error(`invalid Cranfield file ${join(dir, file)} at ${where}`);
  }
  return result.data;
}

function cached<T>(load: (dir: string) => T): (dataDir?: string) => T {
  const cache = new Map<string, T>();
  return (dataDir?: string): T => {
    const dir = resolve(dataDir ?? findCranfieldDir());
    let value = cache.get(dir);
    if (value === undefined) {
      value = load(dir);
      cache.set(dir, value);
    }
    return value;
  };
}

/** The 1,400 Cranfield abstracts, in file order. Frozen and cached. */
export const loadCranfieldDocs: (dataDir?: string) => readonly CranDoc[] = cached((dir) => {
  const docs: CranDoc[] = parseWith(docsSchema, dir, 'cran_docs.json');
  const seen = new Set<string>();
  for (const d of docs) {
    if (seen.has(d.id)) throw new Error(`duplicate Cranfield doc id ${d.id}`);
    seen.add(d.id);
  }
  return Object.freeze(docs.map((d) => Object.freeze(d)));
});

/** The 225 Cranfield queries, in file order. Frozen and cached. */
export const loadCranfieldQueries: (dataDir?: string) => readonly CranQuery[] = cached((dir) =>
  Object.freeze(
    parseWith(queriesSchema, dir, 'cran_queries.json').map((q) => Object.freeze({ id: q['query number'], text: q.query.trim() })),
  ),
);

/** The 1,837 graded judgements, in file order. Frozen and cached. */
export const loadCranfieldQrels: (dataDir?: string) => readonly CranQrel[] = cached((dir) =>
  Object.freeze(
    parseWith(qrelsSchema, dir, 'cran_qrels.json').map((r) => Object.freeze({ queryId: r.query_num, docId: r.id, position: r.position })),
  ),
);
