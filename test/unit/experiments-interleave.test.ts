import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { creditClicks, teamDraft, type Interleaving } from '../../src/core/experiments/interleave.js';
import { seededRandom } from '../../src/core/experiments/random.js';

const id = (x: string): string => x;
// Ranked lists over a small id space, so the two lists overlap often.
const list = fc.uniqueArray(
  fc.integer({ min: 0, max: 40 }).map((n) => `d${n}`),
  { maxLength: 30 },
);

function checkCommonInvariants(result: Interleaving<string>, a: string[], b: string[], k: number): void {
  const ids = result.hits.map((h) => h.id);
  expect(new Set(ids).size).toBe(ids.length); // no duplicates
  expect(ids.length).toBe(Math.min(k, new Set([...a, ...b]).size)); // k hits when the lists have them
  for (const hit of result.hits) {
    expect((hit.team === 'A' ? a : b).includes(hit.id)).toBe(true); // a team only contributes its own hits
    expect(result.teams.get(hit.id)).toBe(hit.team);
  }
  for (const [team, source] of [
    ['A', a],
    ['B', b],
  ] as const) {
    const ranks = result.hits.filter((h) => h.team === team).map((h) => source.indexOf(h.id));
    expect(ranks).toEqual([...ranks].sort((x, y) => x - y)); // each team's picks keep its list order
  }
}

describe('team-draft interleaving', () => {
  it('keeps its invariants over many random list pairs (seeded)', () => {
    fc.assert(
      fc.property(list, list, fc.integer({ min: 1, max: 20 }), fc.integer(), (a, b, k, seed) => {
        const result = teamDraft(a, b, k, seededRandom(seed), id);
        checkCommonInvariants(result, a, b, k);
        // While both lists still have unshown hits, every prefix is balanced within one hit.
        if (a.length >= k && b.length >= k) {
          let countA = 0;
          let countB = 0;
          for (const hit of result.hits) {
            if (hit.team === 'A') countA++;
            else countB++;
            expect(Math.abs(countA - countB)).toBeLessThanOrEqual(1);
          }
          expect(result.hits).toHaveLength(k);
        }
      }),
      { seed: 20080101, numRuns: 2_000 },
    );
  });

  it("each pick is the team's best hit not yet shown", () => {
    const result = teamDraft(['a', 'b', 'c', 'd'], ['b', 'a', 'e', 'f'], 4, () => 0, id); // coin always says A
    // A picks a; B (fewer picks) picks b; tie → A: next unshown of A is c; B: a, b shown → e.
    expect(result.hits.map((h) => `${h.team}:${h.id}`)).toEqual(['A:a', 'B:b', 'A:c', 'B:e']);
  });

  it('fills from the longer list when the other runs out', () => {
    const result = teamDraft(['a'], ['b', 'c', 'd'], 4, () => 0.9, id);
    expect(result.hits.map((h) => h.id)).toEqual(['b', 'a', 'c', 'd']);
    expect(result.hits.map((h) => h.team)).toEqual(['B', 'A', 'B', 'B']);
  });

  it('identical lists give each team about half the first picks', () => {
    const list10 = Array.from({ length: 10 }, (_, i) => `d${i}`);
    const random = seededRandom(7);
    let firstIsA = 0;
    for (let i = 0; i < 2_000; i++) if (teamDraft(list10, list10, 10, random, id).hits[0]!.team === 'A') firstIsA++;
    expect(Math.abs(firstIsA / 2_000 - 0.5)).toBeLessThan(0.05);
  });
});

describe('click credit', () => {
  const teams = new Map([
    ['a', 'A'],
    ['b', 'B'],
    ['c', 'A'],
  ] as const);
  it('counts each distinct credited hit once for its team', () => {
    expect(creditClicks(teams, ['a', 'c', 'b'])).toEqual({ A: 2, B: 1, outcome: 'A' });
    expect(creditClicks(teams, ['b', 'b', 'b'])).toEqual({ A: 0, B: 1, outcome: 'B' });
    expect(creditClicks(teams, ['a', 'b', 'zzz'])).toEqual({ A: 1, B: 1, outcome: 'tie' });
    expect(creditClicks(teams, [])).toEqual({ A: 0, B: 0, outcome: 'tie' });
  });
});
