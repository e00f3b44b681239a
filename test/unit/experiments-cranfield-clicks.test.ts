/**
 * Interleaving end to end on Cranfield with the two demo BM25 engines in process. Simulated
 * traffic: each of the 225 queries is issued by five users (1,125 impressions); each impression
 * team-draft interleaves the two arms' top 10, a simulated user clicks relevant hits (by the
 * qrels), the clicks come back as §7.16 feedback signals carrying the signed attribution token,
 * and the verified token credits each click to its arm. The impression is the unit of analysis,
 * as in online interleaving. The stronger arm (abstracts) must win significantly; an arm against
 * an identical copy of itself (A/A) must not, beyond the nominal false-positive rate.
 *
 * (With a single impression per query the signal is too weak for 225 queries: the two engines
 * share most relevant hits of their top 10, and team draft credits shared hits at random.)
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { createBm25Engine, type Bm25View } from '../../src/demo/bm25/index.js';
import { loadCranfieldEval } from '../../src/demo/eval/cranfield.js';
import { creditFeedback, signAttribution, verifyAttribution } from '../../src/core/experiments/attribution.js';
import { creditClicks, teamDraft } from '../../src/core/experiments/interleave.js';
import { seededRandom, type Random } from '../../src/core/experiments/random.js';
import { preferenceSummary, type PreferenceSummary } from '../../src/core/experiments/stats.js';

const SECRET = 'cranfield-interleaving-secret';
const USERS_PER_QUERY = 5;
const { queries, judgements } = loadCranfieldEval();
/** Each arm's top 10 per query, computed once. */
type Lists = Map<string, string[]>;
let titles: Lists;
let abstracts: Lists;
let abstractsCopy: Lists;

function topTen(view: Bm25View): Lists {
  const engine = createBm25Engine(view);
  return new Map(queries.map((q) => [q.id, engine.search(q.text, 10).hits.map((h) => h.id)]));
}

beforeAll(() => {
  titles = topTen('title');
  abstracts = topTen('body');
  abstractsCopy = topTen('body'); // a second, independently built engine
});

/**
 * A position-biased user: examines rank r with probability 0.9^(r−1) and clicks an examined hit
 * with probability gain / 4 (Cranfield gains 1…4; non-relevant hits are never clicked).
 */
function simulatedClicks(ids: readonly string[], judged: ReadonlyMap<string, number>, random: Random): string[] {
  return ids.filter((id, rank) => random() < 0.9 ** rank && random() < (judged.get(id) ?? 0) / 4);
}

interface Outcome {
  impressions: PreferenceSummary;
  /** Per query, credit summed over its impressions: the more conservative unit. */
  queries: PreferenceSummary;
}

function interleavingExperiment(armA: Lists, armB: Lists, seed: number, viaTokens = false): Outcome {
  const random = seededRandom(seed);
  const impressions = { wins: 0, losses: 0, ties: 0 };
  const perQuery = { wins: 0, losses: 0, ties: 0 };
  for (const query of queries) {
    let creditA = 0;
    let creditB = 0;
    for (let user = 0; user < USERS_PER_QUERY; user++) {
      const shown = teamDraft(armA.get(query.id)!, armB.get(query.id)!, 10, random, (id) => id);
      const clicks = simulatedClicks(
        shown.hits.map((h) => h.id),
        judgements.get(query.id)!,
        random,
      );
      let credit;
      if (viaTokens) {
        // The answer carries the token; the client echoes it with its feedback.
        const token = signAttribution(
          { experiment: 'il', arms: ['abstracts', 'titles'], teams: shown.teams, issuedAt: Date.now() },
          SECRET,
        );
        credit = creditFeedback(
          verifyAttribution(token, { secret: SECRET, ttlMs: 60_000 }),
          clicks.map((hitId) => ({ hitId, used: true })),
        );
      } else {
        credit = creditClicks(shown.teams, clicks);
      }
      creditA += credit.A;
      creditB += credit.B;
      if (credit.outcome === 'A') impressions.wins++;
      else if (credit.outcome === 'B') impressions.losses++;
      else impressions.ties++;
    }
    if (creditA > creditB) perQuery.wins++;
    else if (creditB > creditA) perQuery.losses++;
    else perQuery.ties++;
  }
  return {
    impressions: preferenceSummary(impressions.wins, impressions.losses, impressions.ties),
    queries: preferenceSummary(perQuery.wins, perQuery.losses, perQuery.ties),
  };
}

const line = (name: string, s: PreferenceSummary): string =>
  `${name.padEnd(34)} wins ${s.wins}  losses ${s.losses}  ties ${s.ties}  preference ${s.preference.toFixed(3)} ` +
  `[${s.interval[0].toFixed(3)}, ${s.interval[1].toFixed(3)}]  sign-test p ${s.pValue.toPrecision(3)}`;

describe('team-draft interleaving on Cranfield with simulated clicks', () => {
  it('abstracts beats titles significantly; abstracts against its copy does not', () => {
    expect(queries).toHaveLength(225);
    const ab = interleavingExperiment(abstracts, titles, 2008, true);
    const aa = interleavingExperiment(abstracts, abstractsCopy, 2008, true);
    console.log(
      [
        `Interleaving, 225 Cranfield queries × ${USERS_PER_QUERY} simulated users:`,
        line('abstracts vs titles (impressions)', ab.impressions),
        line('abstracts vs titles (per query)', ab.queries),
        line('A/A abstracts (impressions)', aa.impressions),
        line('A/A abstracts (per query)', aa.queries),
      ].join('\n  '),
    );
    expect(ab.impressions.wins + ab.impressions.losses + ab.impressions.ties).toBe(225 * USERS_PER_QUERY);
    expect(ab.impressions.wins).toBeGreaterThan(ab.impressions.losses);
    expect(ab.impressions.pValue).toBeLessThan(0.05);
    expect(ab.impressions.interval[0]).toBeGreaterThan(0.5);
    expect(aa.impressions.pValue).toBeGreaterThan(0.05);
    expect(aa.impressions.interval[0]).toBeLessThan(0.5);
    expect(aa.impressions.interval[1]).toBeGreaterThan(0.5);
  });

  it('over 20 seeds, A/B is nearly always significant and A/A about at the nominal 5 %', () => {
    const seeds = Array.from({ length: 20 }, (_, i) => 100 + i);
    const abSignificant = seeds.filter((seed) => interleavingExperiment(abstracts, titles, seed).impressions.pValue < 0.05).length;
    const aaSignificant = seeds.filter((seed) => interleavingExperiment(abstracts, abstractsCopy, seed).impressions.pValue < 0.05).length;
    console.log(`Interleaving over 20 seeds: A/B significant in ${abSignificant}, A/A significant in ${aaSignificant}`);
    expect(abSignificant).toBeGreaterThanOrEqual(18);
    expect(aaSignificant).toBeLessThanOrEqual(3); // expected 1; P[≥ 4 of 20 | α = 0.05] ≈ 1.6 %
  });
});
