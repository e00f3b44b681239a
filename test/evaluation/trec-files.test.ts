import { describe, expect, it } from 'vitest';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { averagePrecision, precisionAtK } from '../../src/evaluation/metrics.js';
import { loadInputs, loadRunFile } from '../../src/evaluation/inputs.js';
import {
  EvalInputError,
  formatQrels,
  formatRun,
  nextDown,
  parseQrels,
  parseQueries,
  parseRun,
  type RankedDocs,
} from '../../src/evaluation/trec.js';
import { loadCranfieldEval } from '../../src/demo/eval/cranfield.js';
import { tmpDir } from '../support/processes.js';

function errorOf(run: () => unknown): EvalInputError {
  try {
    run();
  } catch (err) {
    if (err instanceof EvalInputError) return err;
    throw err;
  }
  throw new Error('expected an EvalInputError');
}

describe('run files', () => {
  it('round-trip in the served order, ties included', () => {
    const run = new Map<string, RankedDocs>([
      [
        'q1',
        [
          { id: 'd3', score: 2.5 },
          { id: 'd1', score: 1 },
          { id: 'd9', score: 1 },
          { id: 'd2', score: 1 },
          { id: 'd7', score: 0 },
        ],
      ],
      [
        'q2',
        [
          { id: 'a', score: 0.016 },
          { id: 'b', score: 0.016 },
          { id: 'c', score: -3 },
        ],
      ],
    ]);
    const text = formatRun('my-arm', run);
    expect(text.split('\n')[0]).toBe('q1 Q0 d3 1 2.5 my-arm');
    const back = parseRun(text, 'arm.run');
    expect(back.tag).toBe('my-arm');
    for (const [qid, docs] of run) {
      const read = back.run.get(qid)!;
      expect(read.map((d) => d.id)).toEqual(docs.map((d) => d.id));
      // Tied scores are nudged down by a few ulps only.
      read.forEach((d, i) => expect(d.score).toBeCloseTo(docs[i]!.score, 12));
    }
  });

  it('are read in trec_eval order: score descending, ties by docid descending, rank column ignored', () => {
    const text = ['q 0 b 1 1.0 t', 'q Q0 a 2 1.0 t', 'q Q0 c 3 1.0 t', 'q Q0 z 9 5 t'].join('\n');
    expect(
      parseRun(text, 'r')
        .run.get('q')!
        .map((d) => d.id),
    ).toEqual(['z', 'c', 'b', 'a']);
  });

  it('name the line of a malformed entry', () => {
    expect(errorOf(() => parseRun('q Q0 d 1 1.0 t\nq Q0 e 2 t', 'r.run')).message).toBe(
      'r.run:2: expected 6 columns "qid Q0 docid rank score tag", got 5',
    );
    expect(errorOf(() => parseRun('q Q0 d 1 high t', 'r.run')).message).toBe('r.run:1: score "high" is not a finite number');
    expect(errorOf(() => parseRun('q Q0 d one 1 t', 'r.run')).message).toBe('r.run:1: rank "one" is not an integer');
    expect(errorOf(() => parseRun('# c\nq Q0 d 1 1 t\n\nq Q0 d 2 0.5 t', 'r.run')).message).toBe(
      'r.run:4: document "d" appears twice for query "q" (also line 2)',
    );
    expect(errorOf(() => parseRun('q Q0 d 1 1 a\nq Q0 e 2 0.5 b', 'r.run')).message).toBe(
      'r.run:2: run tag "b" differs from "a" (one run per file)',
    );
    expect(errorOf(() => parseRun('\n# nothing\n', 'r.run')).message).toBe('r.run: no run lines found');
  });

  it('nextDown gives the next double below', () => {
    expect(nextDown(1)).toBeLessThan(1);
    expect(1 - nextDown(1)).toBe(Number.EPSILON / 2);
    expect(nextDown(0)).toBe(-Number.MIN_VALUE);
    expect(nextDown(-1)).toBeLessThan(-1);
  });
});

describe('qrels files', () => {
  it('read graded judgements and write them back', () => {
    const qrels = parseQrels('1 0 184 3\n1 0 29 0\n2 Q0 7 -1\n', 'q.txt');
    expect(qrels.judgements.get('1')).toEqual(
      new Map([
        ['184', 3],
        ['29', 0],
      ]),
    );
    expect(qrels.lineOf.get('2')).toBe(3);
    expect(parseQrels(formatQrels(qrels.judgements), 'again').judgements).toEqual(qrels.judgements);
  });

  it('name the line of a malformed entry', () => {
    expect(errorOf(() => parseQrels('1 0 184 3\n1 0 29\n', 'qrels.txt')).message).toBe(
      'qrels.txt:2: expected 4 columns "qid iter docid rel", got 3',
    );
    expect(errorOf(() => parseQrels('1 0 184 2.5', 'qrels.txt')).message).toBe('qrels.txt:1: relevance "2.5" is not an integer');
    expect(errorOf(() => parseQrels('1 0 184 1\n1 0 184 2', 'qrels.txt')).message).toBe(
      'qrels.txt:2: document "184" is judged twice for query "1" (also line 1)',
    );
  });
});

describe('query files', () => {
  it('read TSV and JSON lines', () => {
    expect(parseQueries('1\tboundary layer\n# skip\n2\tshock waves \n', 'q.tsv')).toEqual([
      { id: '1', text: 'boundary layer' },
      { id: '2', text: 'shock waves' },
    ]);
    expect(parseQueries('{"qid": 1, "text": "a"}\n{"_id": "x", "query": "b"}\n', 'q.jsonl')).toEqual([
      { id: '1', text: 'a' },
      { id: 'x', text: 'b' },
    ]);
  });

  it('name the line of a malformed entry', () => {
    expect(errorOf(() => parseQueries('1\tok\n2 no tab\n', 'q.tsv')).message).toBe('q.tsv:2: expected "qid<TAB>text"');
    expect(errorOf(() => parseQueries('{"qid": 1, "text": "a"}\n{oops', 'q.jsonl')).message).toMatch(/^q\.jsonl:2: not valid JSON/);
    expect(errorOf(() => parseQueries('{"qid": 1}', 'q.jsonl')).message).toBe('q.jsonl:1: expected a non-empty "text" (or "query") string');
    expect(errorOf(() => parseQueries('1\ta\n1\tb', 'q.tsv')).message).toBe('q.tsv:2: query id "1" appears twice (also line 1)');
  });
});

describe('inputs', () => {
  const dir = tmpDir('rcp-eval-inputs-');
  const queries = path.join(dir, 'queries.tsv');
  writeFileSync(queries, '1\tfirst\n2\tsecond\n');

  it('refuse judgements or runs for a query the query set lacks, naming the line', () => {
    const qrels = path.join(dir, 'qrels.txt');
    writeFileSync(qrels, '1 0 a 1\n2 0 b 1\n3 0 c 1\n');
    expect(errorOf(() => loadInputs(queries, qrels)).message).toBe(`${qrels}:3: unknown query id "3" (not in ${queries})`);
    const run = path.join(dir, 'x.run');
    writeFileSync(run, '1 Q0 a 1 1 x\n7 Q0 a 1 1 x\n');
    expect(errorOf(() => loadRunFile(run, [{ id: '1', text: 'first' }])).message).toBe(
      `${run}:2: unknown query id "7" (not in the query set)`,
    );
    expect(errorOf(() => loadInputs(path.join(dir, 'missing.tsv'), qrels)).message).toMatch(/missing\.tsv: cannot read/);
  });

  it('default to the bundled Cranfield collection', () => {
    const inputs = loadInputs(undefined, undefined);
    expect(inputs.queries).toHaveLength(225);
    expect(inputs.judgements).toEqual(loadCranfieldEval().judgements);
  });
});

describe('P@k and AP (trec_eval P and map)', () => {
  const judged = new Map([
    ['a', 2],
    ['b', 1],
    ['c', 1],
    ['n', 0],
  ]);
  it('P@k keeps k as denominator', () => {
    expect(precisionAtK(['a', 'x', 'b'], judged, 2)).toBe(0.5);
    expect(precisionAtK(['a'], judged, 10)).toBe(0.1);
    expect(precisionAtK(['n', 'x'], judged, 2)).toBe(0);
  });
  it('AP averages precision at each relevant rank over all relevant documents', () => {
    // relevant at ranks 1 and 3 of 3 relevant: (1/1 + 2/3) / 3
    expect(averagePrecision(['a', 'x', 'b'], judged)).toBeCloseTo((1 + 2 / 3) / 3, 12);
    expect(averagePrecision(['a', 'b', 'c'], judged)).toBe(1);
    expect(averagePrecision(['a', 'a', 'b'], judged)).toBeCloseTo((1 + 2 / 3) / 3, 12); // a repeat earns nothing
    expect(averagePrecision(['x'], new Map())).toBe(0);
  });
});
