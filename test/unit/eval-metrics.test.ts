import { describe, expect, it } from 'vitest';
import { cranfieldGain, dcg, mean, mrr, ndcgAtK, recallAtK } from '../../src/evaluation/metrics.js';
import { evaluateRun, loadCranfieldEval } from '../../src/demo/eval/cranfield.js';

// Judgements used throughout: a is most relevant (gain 4), b next (3), c least (1).
const J = new Map([
  ['a', 4],
  ['b', 3],
  ['c', 1],
]);
const LOG2_3 = Math.log2(3); // 1.5849625…

describe('cranfieldGain', () => {
  it('maps position 1..4 to gain 4..1', () => {
    expect([1, 2, 3, 4].map(cranfieldGain)).toEqual([4, 3, 2, 1]);
  });
  it('rejects positions outside 1..4', () => {
    for (const bad of [0, 5, 1.5, -1, Number.NaN]) expect(() => cranfieldGain(bad)).toThrow(RangeError);
  });
});

describe('dcg', () => {
  it('is Σ gain_i / log2(i + 1) with linear gain', () => {
    // 3/log2(2) + 2/log2(3) + 1/log2(4) = 3 + 1.2618595 + 0.5
    expect(dcg([3, 2, 1])).toBeCloseTo(4.7618595, 6);
    expect(dcg([])).toBe(0);
  });
});

describe('ndcgAtK', () => {
  it('hand-computed example with an irrelevant hit at rank 1', () => {
    // DCG@3  = 0 + 4/log2(3) + 1/log2(4)            = 3.0237190
    // IDCG@3 = 4 + 3/log2(3) + 1/log2(4)            = 6.3927893
    expect(ndcgAtK(['x', 'a', 'c', 'b'], J, 3)).toBeCloseTo(0.472989, 5);
    expect(ndcgAtK(['x', 'a', 'c', 'b'], J, 3)).toBeCloseTo((4 / LOG2_3 + 0.5) / (4 + 3 / LOG2_3 + 0.5), 12);
  });

  it('uses every judged document for IDCG even when the list is short', () => {
    // DCG = 3/1 + 0 + 4/log2(4) = 5; IDCG@10 = 6.3927893 → 0.7821312
    expect(ndcgAtK(['b', 'x', 'a'], J, 10)).toBeCloseTo(0.7821312, 6);
  });

  it('is 1 for the ideal ordering and below 1 for any swap', () => {
    expect(ndcgAtK(['a', 'b', 'c'], J, 10)).toBeCloseTo(1, 12);
    expect(ndcgAtK(['b', 'a', 'c'], J, 10)).toBeLessThan(1);
  });

  it('truncates at k: a relevant doc at rank k + 1 earns nothing', () => {
    expect(ndcgAtK(['x', 'y', 'a'], J, 2)).toBe(0);
    // k = 1 → IDCG@1 = 4, DCG@1 = 3
    expect(ndcgAtK(['b', 'a'], J, 1)).toBeCloseTo(0.75, 12);
  });

  it('counts a repeated id once', () => {
    // [a, a] → 4 + 0; IDCG@2 = 4 + 3/log2(3)
    expect(ndcgAtK(['a', 'a'], J, 2)).toBeCloseTo(4 / (4 + 3 / LOG2_3), 12);
  });

  it('is 0 for an empty ranking and for a query with no relevant documents', () => {
    expect(ndcgAtK([], J, 10)).toBe(0);
    expect(ndcgAtK(['a'], new Map(), 10)).toBe(0);
    expect(ndcgAtK(['a'], new Map([['a', 0]]), 10)).toBe(0);
  });

  it('rejects a bad cutoff', () => {
    expect(() => ndcgAtK(['a'], J, -1)).toThrow(RangeError);
    expect(() => ndcgAtK(['a'], J, 2.5)).toThrow(RangeError);
  });
});

describe('recallAtK', () => {
  it('is the fraction of relevant documents in the top k, whatever their grade', () => {
    expect(recallAtK(['x', 'c', 'y', 'b'], J, 2)).toBeCloseTo(1 / 3, 12);
    expect(recallAtK(['x', 'c', 'y', 'b'], J, 4)).toBeCloseTo(2 / 3, 12);
    expect(recallAtK(['c', 'b', 'a'], J, Infinity)).toBe(1);
  });
  it('does not count duplicates twice', () => {
    expect(recallAtK(['a', 'a', 'a'], J, 3)).toBeCloseTo(1 / 3, 12);
  });
  it('is 0 without relevant documents', () => {
    expect(recallAtK(['a'], new Map(), 10)).toBe(0);
  });
});

describe('mrr (per-query reciprocal rank)', () => {
  it('is 1 / rank of the first relevant document', () => {
    expect(mrr(['x', 'y', 'c', 'a'], J)).toBeCloseTo(1 / 3, 12);
    expect(mrr(['a'], J)).toBe(1);
  });
  it('is 0 when none is relevant or when the first relevant is past k', () => {
    expect(mrr(['x', 'y'], J)).toBe(0);
    expect(mrr(['x', 'y', 'a'], J, 2)).toBe(0);
  });
  it('mean() averages and is 0 for nothing', () => {
    expect(mean([1, 0.5, 0])).toBeCloseTo(0.5, 12);
    expect(mean([])).toBe(0);
  });
});

describe('evaluateRun', () => {
  const judgements = new Map([
    [
      'q1',
      new Map([
        ['a', 4],
        ['b', 1],
      ]),
    ],
    ['q2', new Map([['c', 2]])],
  ]);

  it('averages over every judged query and scores a missing query as 0', () => {
    const result = evaluateRun(
      new Map([
        ['q1', ['b', 'a']],
        ['unjudged', ['a']],
      ]),
      judgements,
    );
    // q1: DCG = 1 + 4/log2(3), IDCG = 4 + 1/log2(3); recall 1; RR 1. q2 missing → 0, 0, 0.
    const q1Ndcg = (1 + 4 / LOG2_3) / (4 + 1 / LOG2_3);
    expect(result.queries).toBe(2);
    expect(result.ndcg10).toBeCloseTo(q1Ndcg / 2, 12);
    expect(result.recall100).toBeCloseTo(0.5, 12);
    expect(result.mrr).toBeCloseTo(0.5, 12);
    expect(result.perQuery.get('q2')).toEqual({ ndcg10: 0, recall100: 0, rr: 0 });
    expect(result.perQuery.has('unjudged')).toBe(false);
  });

  it('applies the @10 and @100 cutoffs', () => {
    const filler = Array.from({ length: 100 }, (_, i) => `f${i}`);
    const result = evaluateRun(new Map([['q2', [...filler.slice(0, 10), 'c']]]), new Map([['q2', judgements.get('q2')!]]));
    expect(result.ndcg10).toBe(0); // c is at rank 11
    expect(result.recall100).toBe(1);
    expect(result.mrr).toBeCloseTo(1 / 11, 12);
    const deep = evaluateRun(new Map([['q2', [...filler, 'c']]]), new Map([['q2', judgements.get('q2')!]]));
    expect(deep.recall100).toBe(0); // c is at rank 101
  });
});

describe('Cranfield evaluation set', () => {
  const { queries, judgements } = loadCranfieldEval();

  it('has 225 queries lined up with 1,837 graded judgements', () => {
    expect(queries).toHaveLength(225);
    expect(queries[0]).toEqual({
      id: '1',
      text: 'what similarity laws must be obeyed when constructing aeroelastic models of heated high speed aircraft .',
    });
    expect(judgements.size).toBe(225);
    expect(new Set(queries.map((q) => q.id))).toEqual(new Set(judgements.keys()));
    const all = [...judgements.values()].flatMap((m) => [...m.values()]);
    expect(all).toHaveLength(1837);
    expect(new Set(all)).toEqual(new Set([1, 2, 3, 4]));
    // First qrels line: {"query_num": "1", "position": 2, "id": "184"} → gain 3
    expect(judgements.get('1')?.get('184')).toBe(3);
  });

  it('an oracle run scores 1 on every metric; an empty run scores 0', () => {
    const oracle = new Map([...judgements].map(([q, m]) => [q, [...m].sort((x, y) => y[1] - x[1]).map(([d]) => d)] as const));
    const best = evaluateRun(oracle);
    expect(best.queries).toBe(225);
    expect(best.ndcg10).toBeCloseTo(1, 12);
    expect(best.recall100).toBeCloseTo(1, 12);
    expect(best.mrr).toBe(1);
    const none = evaluateRun(new Map());
    expect([none.ndcg10, none.recall100, none.mrr, none.queries]).toEqual([0, 0, 0, 225]);
  });
});
