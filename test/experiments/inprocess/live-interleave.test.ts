/**
 * Live interleave experiments and attributed feedback in process: team-draft invariants on the
 * served answer, the signed token, credit through §7.16 `feedback`, forwarding to the engines that
 * returned the hit, and refusal of forged or stale tokens.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { signAttribution, verifyAttribution } from '../../../src/core/experiments/attribution.js';
import { RcpError } from '../../../src/core/protocol/errors.js';
import type { JsonObject } from '../../../src/core/protocol/jsonrpc.js';
import { FakeEngine } from '../../support/fake-engine.js';
import { startInProcess, type InProcessGateway } from '../../support/in-process.js';

const SECRET = 'interleave-secret-for-tests';

interface Answer extends JsonObject {
  hits: Array<{ id: string; score: number; meta: { engine: string } }>;
  _meta: JsonObject & { fusion: string; 'x-rcpgw': { experiment: string; arm: string; attribution?: string; interleaved?: false } };
}

let running: InProcessGateway | undefined;
afterEach(async () => {
  await running?.stop();
  running = undefined;
});

/** Engine a ranks a-1…a-20, b ranks b-1…b-20; c (feedback-capable) shares a's ids. */
function engines(): { a: FakeEngine; b: FakeEngine; c: FakeEngine } {
  const feedbackCalls: JsonObject[] = [];
  return {
    a: new FakeEngine('a'),
    b: new FakeEngine('b'),
    c: new FakeEngine('c', {
      capabilities: { retrieve: { maxK: 50 }, feedback: {} },
      hits: Array.from({ length: 20 }, (_, i) => ({ id: `c-${i + 1}`, score: 1 - i / 21 })),
      methods: {
        feedback: (params) => {
          feedbackCalls.push(params);
          return { accepted: (params.signals as unknown[]).length };
        },
      },
    }),
  };
}

async function gateway(arms: [string, string], extra: JsonObject = {}): Promise<{ gw: InProcessGateway; c: FakeEngine }> {
  const { a, b, c } = engines();
  running = await startInProcess([a, b, c], {
    gateway: {
      experiments: {
        secret: SECRET,
        arms: { onlyA: { engines: ['a'] }, onlyB: { engines: ['b'] }, onlyC: { engines: ['c'] }, copyA: { engines: ['a'] } },
        list: [{ id: 'il', kind: 'interleave', arms, ...extra }],
        report: true,
      },
    },
  });
  return { gw: running, c };
}

const retrieve = (gw: InProcessGateway, user: string, query = 'q', k = 10): Promise<Answer> =>
  gw.call('retrieve', { query, k }, { headers: { 'x-rcpgw-user': user } }) as Promise<Answer>;

const feedback = (gw: InProcessGateway, token: unknown, hitIds: string[]): Promise<JsonObject> =>
  gw.call('feedback', { signals: hitIds.map((hitId) => ({ hitId, used: true })), _meta: { 'x-rcpgw': { attribution: token } } });

describe('interleave experiments in the retrieve path', () => {
  it('serves k distinct hits, team picks balanced in every prefix, each team in its own order', async () => {
    const { gw } = await gateway(['onlyA', 'onlyB']);
    for (let user = 0; user < 20; user++) {
      const answer = await retrieve(gw, `u${user}`, `query ${user}`, 10);
      expect(answer.hits).toHaveLength(10);
      expect(new Set(answer.hits.map((h) => h.id)).size).toBe(10);
      expect(answer._meta.fusion).toBe('team-draft');
      expect(answer._meta['x-rcpgw']).toMatchObject({ experiment: 'il', arm: 'onlyA+onlyB' });
      const claims = verifyAttribution(answer._meta['x-rcpgw'].attribution, { secret: SECRET, ttlMs: 60_000 });
      let a = 0;
      let b = 0;
      const order = { A: [] as number[], B: [] as number[] };
      for (const hit of answer.hits) {
        const team = claims.teams.get(hit.id)!;
        if (team === 'A') a++;
        else b++;
        expect(Math.abs(a - b)).toBeLessThanOrEqual(1);
        expect(hit.id.startsWith(team === 'A' ? 'a-' : 'b-')).toBe(true);
        order[team].push(Number(hit.id.slice(2)));
        expect(claims.sources!.get(hit.id)).toEqual([hit.id[0]]);
      }
      for (const ranks of Object.values(order)) expect(ranks).toEqual([...ranks].sort((x, y) => x - y));
      for (let i = 1; i < answer.hits.length; i++) expect(answer.hits[i - 1]!.score).toBeGreaterThan(answer.hits[i]!.score);
    }
  });

  it('gives one user and query the same interleaving every time (seeded, replica-independent)', async () => {
    const { gw } = await gateway(['onlyA', 'onlyB']);
    const first = await retrieve(gw, 'u1', 'same');
    const again = await retrieve(gw, 'u1', 'same');
    expect(again.hits.map((h) => h.id)).toEqual(first.hits.map((h) => h.id));
  });

  it('credits feedback to the team of each used hit, once per impression', async () => {
    const { gw } = await gateway(['onlyA', 'onlyB']);
    const answer = await retrieve(gw, 'u1');
    const token = answer._meta['x-rcpgw'].attribution!;
    const aHits = answer.hits.filter((h) => h.id.startsWith('a-')).map((h) => h.id);
    const result = await feedback(gw, token, aHits.slice(0, 2));
    expect(result).toEqual({ accepted: 2, _meta: { 'x-rcpgw': { experiment: 'il', outcome: 'onlyA', credited: true, forwarded: [] } } });
    const repeated = await feedback(gw, token, aHits.slice(0, 2));
    expect((repeated._meta as JsonObject)['x-rcpgw']).toMatchObject({ credited: false });
    const report = (await gw.call('x-rcpgw/experiments')) as { experiments: Array<{ interleave: JsonObject }> };
    expect(report.experiments[0]!.interleave).toMatchObject({ a: 'onlyA', b: 'onlyB', wins: 1, losses: 0, ties: 0 });
  });

  it('forwards signals to the engines that returned the hits and advertise feedback', async () => {
    const { gw, c } = await gateway(['onlyA', 'onlyC']);
    const answer = await retrieve(gw, 'u2');
    const cHit = answer.hits.find((h) => h.id.startsWith('c-'))!.id;
    const aHit = answer.hits.find((h) => h.id.startsWith('a-'))!.id;
    const result = await feedback(gw, answer._meta['x-rcpgw'].attribution, [cHit, aHit]);
    expect((result._meta as JsonObject)['x-rcpgw']).toMatchObject({ outcome: 'tie', forwarded: ['c'] });
    const calls = c.callsOf('feedback');
    expect(calls).toHaveLength(1);
    expect(calls[0]!.params.signals).toEqual([{ hitId: cHit, used: true }]);
    expect((calls[0]!.params._meta as JsonObject)['x-rcpgw']).toBeUndefined();
  });

  it('refuses forged, malformed and stale tokens with -32602', async () => {
    const { gw } = await gateway(['onlyA', 'onlyB'], {});
    const answer = await retrieve(gw, 'u3');
    const token = answer._meta['x-rcpgw'].attribution!;
    const [body, mac] = token.split('.') as [string, string];
    const forgedBody = Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(body, 'base64url').toString()), h: [['b-1'], []] })).toString(
      'base64url',
    );
    const stale = signAttribution(
      { experiment: 'il', arms: ['onlyA', 'onlyB'], teams: new Map(), issuedAt: Date.now() - 2 * 86_400_000 },
      SECRET,
    );
    const otherSecret = signAttribution(
      { experiment: 'il', arms: ['onlyA', 'onlyB'], teams: new Map(), issuedAt: Date.now() },
      'x'.repeat(20),
    );
    for (const bad of [`${forgedBody}.${mac}`, 'garbage', 42, stale, otherSecret]) {
      const error = await feedback(gw, bad, ['a-1']).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(RcpError);
      expect((error as RcpError).code).toBe(-32602);
    }
    const report = (await gw.call('x-rcpgw/experiments')) as { experiments: Array<{ interleave?: JsonObject }> };
    expect(report.experiments[0]!.interleave).toBeUndefined();
  });

  it('advertises feedback for interleaving even when no engine does', async () => {
    const { gw } = await gateway(['onlyA', 'onlyB']);
    const caps = gw.gateway.describe().capabilities;
    expect(caps.feedback).toBeDefined();
    expect(caps['x-rcpgw']).toEqual({ experiments: true });
  });
});
