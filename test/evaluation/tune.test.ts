import { describe, expect, it } from 'vitest';
import { ArmSchema } from '../../src/core/experiments/arms.js';
import { armConfigOf, fuseArm, listDepth, windowOf, type EngineList, type ResolvedArm } from '../../src/evaluation/arm-fusion.js';
import { compareArms, metricsFor, scoreRun } from '../../src/evaluation/scoring.js';
import { candidateArms, simplexWeights, tune } from '../../src/evaluation/tune.js';
import { seededRandom } from '../../src/core/experiments/random.js';

const base: ResolvedArm = {
  name: 'fused',
  engines: ['good', 'noisy'],
  weights: { good: 1, noisy: 1 },
  fusion: 'rrf',
  rrfK: 60,
  dedup: 'id',
  fusionDepth: 20,
  fusionHeadroom: 2,
};
const [ndcg] = metricsFor({ at: 10, recallAt: 100 });

/** 60 queries: "good" ranks the 3 relevant documents first, "noisy" puts them at random depths. */
function synthetic(): { lists: Map<string, Map<string, EngineList>>; judgements: Map<string, Map<string, number>>; queryIds: string[] } {
  const random = seededRandom(5);
  const lists = new Map<string, Map<string, EngineList>>();
  const judgements = new Map<string, Map<string, number>>();
  const queryIds: string[] = [];
  for (let q = 0; q < 60; q++) {
    const qid = `q${q}`;
    queryIds.push(qid);
    const docs = Array.from({ length: 40 }, (_, i) => `${qid}-d${i}`);
    judgements.set(
      qid,
      new Map([
        [docs[0]!, 3],
        [docs[1]!, 2],
        [docs[2]!, 1],
      ]),
    );
    const noisy = [...docs].sort(() => random() - 0.5);
    const asList = (engine: string, ids: string[]): EngineList => ({
      engine,
      hits: ids.map((id, i) => ({ id, score: 100 - i })),
      scoreFloor: 0,
      maxK: 30,
    });
    lists.set(
      qid,
      new Map([
        ['good', asList('good', docs)],
        ['noisy', asList('noisy', noisy)],
      ]),
    );
  }
  return { lists, judgements, queryIds };
}

describe('the search space', () => {
  it('spreads weights over a simplex grid', () => {
    expect(simplexWeights(2, 8)).toHaveLength(9);
    expect(simplexWeights(3, 8)).toHaveLength(45);
    for (const w of simplexWeights(3, 4)) expect(w.reduce((a, b) => a + b, 0)).toBeCloseTo(1, 12);
  });
  it('starts with the configured arm, then strategy × rrfK × weights × depth', () => {
    const candidates = candidateArms(base);
    expect(candidates[0]).toBe(base);
    expect(candidates).toHaveLength(1 + 9 * 9 * 5 + 2 * 9 * 5);
    for (const arm of candidates.slice(0, 20)) expect(ArmSchema.safeParse(armConfigOf(arm)).success).toBe(true);
  });
});

describe('arm fusion', () => {
  it('windows are the gateway depth within the engine maxK; lists are fetched two windows deep', () => {
    // The gateway's rule (core/federation/depth.ts): fusionDepth while k ≤ fusionDepth, else k × headroom.
    expect(windowOf({ fusionDepth: 20, fusionHeadroom: 2 }, { engine: 'e', maxK: 100 }, 10)).toBe(20);
    expect(windowOf({ fusionDepth: 30, fusionHeadroom: 2 }, { engine: 'e', maxK: 100 }, 10)).toBe(30);
    expect(windowOf({ fusionDepth: 5, fusionHeadroom: 2 }, { engine: 'e', maxK: 100 }, 10)).toBe(20);
    expect(windowOf({ fusionDepth: 20, fusionHeadroom: 2 }, { engine: 'e', maxK: 100 }, 100)).toBe(100);
    expect(
      listDepth(
        [
          { fusionDepth: 5, fusionHeadroom: 1 },
          { fusionDepth: 5, fusionHeadroom: 3 },
        ],
        [{ engine: 'a', maxK: 50 }, { engine: 'b' }],
        10,
      ),
    ).toBe(60);
  });
  it('a one-engine arm keeps the engine order; a failed engine is left out', async () => {
    const { lists } = synthetic();
    const one = lists.get('q0')!;
    const only: ResolvedArm = { ...base, engines: ['noisy'], weights: { noisy: 1 } };
    expect((await fuseArm(only, one, 10))!.map((h) => h.id)).toEqual(
      one
        .get('noisy')!
        .hits.slice(0, 10)
        .map((h) => h.id),
    );
    const degraded = await fuseArm(base, new Map([['good', one.get('good')!]]), 5);
    expect(degraded!.map((h) => h.id)).toEqual(['q0-d0', 'q0-d1', 'q0-d2', 'q0-d3', 'q0-d4']);
    expect(await fuseArm(base, new Map(), 5)).toBeUndefined();
  });
});

describe('k-fold tuning', () => {
  it('moves weight to the informative engine and reports held-out next to in-sample', async () => {
    const { lists, judgements, queryIds } = synthetic();
    const report = await tune({ base, lists, judgements, queryIds, metric: ndcg!, k: 10, folds: 5, seed: 1 });
    expect(report.candidates).toBe(496);
    expect(report.folds.map((f) => f.queries).reduce((a, b) => a + b, 0)).toBe(60);
    expect(report.best.score).toBeGreaterThanOrEqual(report.base.score);
    expect(report.best.arm.weights.good!).toBeGreaterThan(report.best.arm.weights.noisy!);
    expect(report.crossValidated).toBeGreaterThan(report.base.score);
    expect(report.crossValidated).toBeLessThanOrEqual(report.best.score + 1e-12);
    await expect(tune({ base, lists, judgements, queryIds, metric: ndcg!, k: 10, folds: 1, seed: 1 })).rejects.toThrow(RangeError);
  });
});

describe('paired comparison', () => {
  it('counts per-query wins, losses and ties and tests the differences', () => {
    const judgements = new Map([
      ['a', new Map([['x', 1]])],
      ['b', new Map([['y', 1]])],
      ['c', new Map([['z', 1]])],
    ]);
    const metrics = metricsFor({ at: 10, recallAt: 100 });
    const better = scoreRun(
      'better',
      new Map([
        ['a', ['x']],
        ['b', ['y']],
        ['c', ['n', 'z']],
      ]),
      judgements,
      ['a', 'b', 'c'],
      metrics,
    );
    const worse = scoreRun(
      'worse',
      new Map([
        ['a', ['n', 'x']],
        ['b', ['y']],
      ]),
      judgements,
      ['a', 'b', 'c'],
      metrics,
    );
    expect(worse.perQuery.mrr).toEqual([0.5, 1, 0]); // the missing query scores 0
    const mrr = compareArms(better, worse, metrics, { trials: 500, seed: 1 }).find((c) => c.metric === 'mrr')!;
    expect(mrr).toMatchObject({ arm: 'better', baseline: 'worse', wins: 2, losses: 0, ties: 1 });
    expect(mrr.delta).toBeCloseTo((1 + 1 + 0.5) / 3 - 0.5, 12);
    expect(mrr.pRandomisation).toBeGreaterThan(0);
    expect(mrr.pTTest).toBeGreaterThan(0);
  });
});
