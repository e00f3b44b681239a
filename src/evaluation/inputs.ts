/**
 * The query set and judgements an evaluation runs on: TREC files named on the command line, or
 * the bundled Cranfield collection (data/cranfield) when none are. Judgements and run files may
 * only name queries of the query set: anything else is an error naming its line, since such a
 * query would silently drop out of (or into) the averages.
 */
import { readFileSync } from 'node:fs';
import { loadCranfieldEval } from '../demo/eval/cranfield.js';
import { EvalInputError, parseQrels, parseQueries, parseRun, type Judgements, type Query, type RunFile } from './trec.js';

export interface EvalInputs {
  /** A short description for the report. */
  collection: string;
  queries: Query[];
  judgements: Judgements;
}

function readText(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (err) {
    throw new EvalInputError(file, undefined, `cannot read: ${(err as Error).message}`);
  }
}

export function loadInputs(queriesFile: string | undefined, qrelsFile: string | undefined): EvalInputs {
  if (queriesFile === undefined && qrelsFile === undefined) {
    const cranfield = loadCranfieldEval();
    return { collection: 'Cranfield (data/cranfield)', queries: cranfield.queries, judgements: cranfield.judgements };
  }
  if (queriesFile === undefined || qrelsFile === undefined) {
    throw new EvalInputError(queriesFile ?? qrelsFile!, undefined, '--queries and --qrels go together');
  }
  const queries = parseQueries(readText(queriesFile), queriesFile);
  const qrels = parseQrels(readText(qrelsFile), qrelsFile);
  const known = new Set(queries.map((q) => q.id));
  for (const [qid, line] of qrels.lineOf) {
    if (!known.has(qid)) throw new EvalInputError(qrelsFile, line, `unknown query id "${qid}" (not in ${queriesFile})`);
  }
  return { collection: `${queriesFile} + ${qrelsFile}`, queries, judgements: qrels.judgements };
}

export function loadRunFile(file: string, queries: readonly Query[]): RunFile {
  const runFile = parseRun(readText(file), file);
  const known = new Set(queries.map((q) => q.id));
  for (const [qid, line] of runFile.lineOf) {
    if (!known.has(qid)) throw new EvalInputError(file, line, `unknown query id "${qid}" (not in the query set)`);
  }
  return runFile;
}
