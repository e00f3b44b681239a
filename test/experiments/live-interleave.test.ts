/**
 * Interleaving on Cranfield through a real gateway process and the two demo engines. Each of the
 * 225 queries is issued by five simulated users (1,125 impressions per experiment); each user
 * examines rank r with probability 0.9^(r−1), clicks an examined hit with probability gain / 4
 * (by the qrels), and sends the clicks as §7.16 feedback with the answer's attribution token
 * (an impression without clicks sends empty feedback: a tie). The gateway credits the teams; its
 * report must show abstracts beating titles with p < 0.05, and abstracts against an arm with the
 * same engine (A/A) not significant. A forged token is refused with -32602.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadCranfieldEval } from '../../src/demo/eval/cranfield.js';
import { seededRandom, type Random } from '../../src/core/experiments/random.js';
import { rpc } from '../support/http-client.js';
import { startGateway, type GatewayHandle } from '../support/processes.js';
import { batches, demoEngines, everyEngineReady, SECRET, xrcpgw, type Call } from './support.js';

const USERS_PER_QUERY = 5;
const { queries, judgements } = loadCranfieldEval();

let gateway: GatewayHandle;
beforeAll(async () => {
  const config = {
    engines: demoEngines(),
    gateway: {
      logLevel: 'warn',
      experiments: {
        secret: SECRET,
        report: true,
        arms: { titles: { engines: ['titles'] }, abstracts: { engines: ['abstracts'] }, 'abstracts-again': { engines: ['abstracts'] } },
        list: [
          { id: 'ab', kind: 'interleave', arms: ['abstracts', 'titles'], assignBy: { param: 'sessionId' } },
          { id: 'aa', kind: 'interleave', arms: ['abstracts', 'abstracts-again'], assignBy: { meta: 'user' } },
        ],
      },
    },
  };
  gateway = await startGateway({ config });
  await everyEngineReady(gateway.url);
}, 330_000);
afterAll(async () => {
  await gateway?.stop();
});

/** A position-biased user clicking relevant hits (never a non-relevant one). */
function clicks(ids: readonly string[], judged: ReadonlyMap<string, number>, random: Random): string[] {
  return ids.filter((id, rank) => random() < 0.9 ** rank && random() < (judged.get(id) ?? 0) / 4);
}

/** Issue every impression of one experiment (`keyed` puts the user in its assignment key) and send the feedback. */
async function impressions(experiment: string, keyed: (user: string) => Record<string, unknown>, seed: number): Promise<void> {
  const retrieves: Call[] = [];
  for (const query of queries)
    for (let u = 0; u < USERS_PER_QUERY; u++)
      retrieves.push({ method: 'retrieve', params: { query: query.text, k: 10, ...keyed(`user-${u}`) } });
  const answers = await batches(gateway.url, retrieves, 50, 2);
  const random = seededRandom(seed);
  const feedback: Call[] = answers.map((answer, i) => {
    const vendor = xrcpgw(answer);
    expect(vendor.experiment, `impression ${i}`).toBe(experiment);
    const hits = (answer.result!.hits as Array<{ id: string }>).map((h) => String(h.id));
    const query = queries[Math.floor(i / USERS_PER_QUERY)]!;
    const signals = clicks(hits, judgements.get(query.id)!, random).map((hitId) => ({ hitId, used: true }));
    return { method: 'feedback', params: { query: query.text, signals, _meta: { 'x-rcpgw': { attribution: vendor.attribution } } } };
  });
  const replies = await batches(gateway.url, feedback, 50, 2);
  expect(replies.filter((r) => r.error !== undefined)).toEqual([]);
}

interface Interleave {
  a: string;
  b: string;
  wins: number;
  losses: number;
  ties: number;
  preference: number;
  interval95: [number, number];
  signTestP: number;
}

describe('interleaving on Cranfield through the live gateway', () => {
  it('abstracts beats titles with p < 0.05; A/A stays not significant', async () => {
    await impressions('ab', (user) => ({ sessionId: user }), 2008);
    await impressions('aa', (user) => ({ _meta: { user } }), 2008);
    const report = (await rpc<{ experiments: Array<{ id: string; interleave: Interleave }> }>(gateway.url, 'x-rcpgw/experiments', {}))
      .result!;
    const [ab, aa] = ['ab', 'aa'].map((id) => report.experiments.find((e) => e.id === id)!.interleave);
    const line = (name: string, s: Interleave): string =>
      `${name}: wins ${s.wins} losses ${s.losses} ties ${s.ties}, preference ${s.preference} [${s.interval95.join(', ')}], sign-test p ${s.signTestP.toPrecision(3)}`;
    console.log(
      `live interleaving, ${queries.length} queries × ${USERS_PER_QUERY} users:\n  ${line('abstracts vs titles', ab!)}\n  ${line('A/A abstracts', aa!)}`,
    );
    expect(ab!.wins + ab!.losses + ab!.ties).toBe(queries.length * USERS_PER_QUERY);
    expect(ab!.wins).toBeGreaterThan(ab!.losses);
    expect(ab!.signTestP).toBeLessThan(0.05);
    expect(ab!.interval95[0]).toBeGreaterThan(0.5);
    expect(aa!.wins + aa!.losses + aa!.ties).toBe(queries.length * USERS_PER_QUERY);
    expect(aa!.signTestP).toBeGreaterThanOrEqual(0.05);
  }, 300_000);

  it('refuses feedback with a forged token (-32602)', async () => {
    const answer = await rpc<{ _meta: { 'x-rcpgw': { attribution: string } } }>(gateway.url, 'retrieve', {
      query: 'shock waves',
      k: 10,
      sessionId: 'u',
    });
    const token = answer.result!._meta['x-rcpgw'].attribution;
    const [body, mac] = token.split('.') as [string, string];
    const claims = JSON.parse(Buffer.from(body, 'base64url').toString()) as { h: [string[], string[]] };
    const forged = `${Buffer.from(JSON.stringify({ ...claims, h: [[...claims.h[0], ...claims.h[1]], []] })).toString('base64url')}.${mac}`;
    const reply = await rpc(gateway.url, 'feedback', {
      signals: [{ hitId: claims.h[1][0], used: true }],
      _meta: { 'x-rcpgw': { attribution: forged } },
    });
    expect(reply.error?.code).toBe(-32602);
  });
});
