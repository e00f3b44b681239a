/**
 * What a hostile (or merely unlucky) engine can do to other engines' answers and to the gateway,
 * through a real gateway process: overwrite another engine's hits by reusing its ids, merge
 * unrelated corpora by coinciding ids, learn engine addresses from error details, and make the
 * gateway buffer unbounded bytes.
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { GatewayHandle } from '../support/processes.js';
import { gatewayOver, hostileEngine, post, retrieveMessage, type HostileEngine, type Json } from './support.js';

const engines: HostileEngine[] = [];
const gateways: GatewayHandle[] = [];

afterAll(async () => {
  for (const gw of gateways) expect(await gw.stop()).toBe(0);
  await Promise.all(engines.map((e) => e.close()));
});

async function engineAnswering(hits: Json[]): Promise<HostileEngine> {
  const engine = await hostileEngine(() => ({ hits }));
  engines.push(engine);
  return engine;
}

async function gateway(...args: Parameters<typeof gatewayOver>): Promise<GatewayHandle> {
  const gw = await gatewayOver(...args);
  gateways.push(gw);
  return gw;
}

const hitsOf = async (gw: GatewayHandle): Promise<Json[]> => {
  const res = (await post(gw.url, retrieveMessage(1, { query: 'q', k: 10 })).then((r) => r.json())) as Json;
  return (res.result as Json).hits as Json[];
};

describe('merged hits (dedup by id)', () => {
  const honestHits = [
    { id: 'doc-1', score: 9, text: 'the real abstract', citation: { uri: 'https://real.example/doc-1' } },
    { id: 'doc-2', score: 8, text: 'another real one' },
  ];
  const hostileHits = [
    { id: 'bait', score: 9, text: 'bait' },
    { id: 'doc-1', score: 8, text: 'click here to read the full paper '.repeat(20), citation: { uri: 'https://phish.example/login' } },
  ];

  it("another engine's longer text never replaces the body of the best-ranked origin", async () => {
    const gw = await gateway([(await engineAnswering(honestHits)).url, (await engineAnswering(hostileHits)).url]);
    const doc = (await hitsOf(gw)).find((h) => h.id === 'doc-1')!;
    expect(doc.text).toBe('the real abstract');
    expect(doc.citation).toEqual({ uri: 'https://real.example/doc-1' });
    expect(doc.meta).toMatchObject({ engine: 'e0', engineRank: 1, bodyEngine: 'e0' });
  });

  it('engines in different idSpaces never merge, even when their ids coincide', async () => {
    const a = await engineAnswering([{ id: 42, score: 1, text: 'paper 42 of corpus A' }]);
    const b = await engineAnswering([{ id: 42, score: 1, text: 'record 42 of corpus B' }]);
    const gw = await gateway([a.url, b.url], {}, [{ idSpace: 'corpus-a' }, { idSpace: 'corpus-b' }]);
    const hits = await hitsOf(gw);
    expect(hits.map((h) => h.text).sort()).toEqual(['paper 42 of corpus A', 'record 42 of corpus B']);
    expect(hits.map((h) => (h.meta as Json).engine).sort()).toEqual(['e0', 'e1']);
  });

  it('engines in one idSpace still fuse (§16.3 default identity)', async () => {
    const a = await engineAnswering([{ id: 7, score: 1, text: 'same doc' }]);
    const b = await engineAnswering([{ id: '7', score: 1, text: 'same doc' }]);
    const gw = await gateway([a.url, b.url], {}, [{ idSpace: 'shared' }, { idSpace: 'shared' }]);
    const hits = await hitsOf(gw);
    expect(hits).toHaveLength(1);
    expect((hits[0]!.meta as Json).engines).toHaveLength(2);
  });
});

describe('engine addresses in client-facing errors', () => {
  it('_meta.degraded and routed errors carry generic reasons; the full detail goes to the log', async () => {
    const ok = await engineAnswering([{ id: 'a', score: 1 }]);
    const doomed = await hostileEngine(() => ({ hits: [] }), { retrieve: { maxK: 10 }, 'x-acme': {} });
    const port = new URL(doomed.url).port;
    const gw = await gateway([ok.url, doomed.url], { routes: { 'x-acme/do-thing': 'e1' } });
    await doomed.close();
    const fused = await post(gw.url, retrieveMessage(1, { query: 'q', k: 3 }));
    const routed = await post(gw.url, { jsonrpc: '2.0', id: 2, method: 'x-acme/do-thing', params: {} });
    const degraded = ((fused.json() as Json).result as Json)._meta as Json;
    expect(degraded.degraded).toMatchObject([{ engine: 'e1', code: -32010, reason: 'transport' }]);
    expect((routed.json() as Json).error).toMatchObject({ code: -32010 });
    for (const text of [fused.text, routed.text]) {
      expect(text).not.toContain('127.0.0.1');
      expect(text).not.toContain(port);
      expect(text).not.toMatch(/ECONNREFUSED|connect /);
    }
    expect(gw.stderr()).toContain('ECONNREFUSED');
  });
});

describe('bytes buffered from engines', () => {
  it('a gateway-wide cap stops reading answers once passed; the budget comes back afterwards', async () => {
    let releaseTails: () => void = () => undefined;
    const tails = new Promise<void>((resolve) => (releaseTails = resolve));
    let heads = 0;
    const pad = 'x'.repeat(400_000);
    const big = await hostileEngine(async (call) => {
      if (call.params.query !== 'big') return { hits: [{ id: 'small', score: 1 }] };
      heads++;
      if (heads === 4) setTimeout(releaseTails, 500);
      return {
        stream: {
          head: `{"jsonrpc":"2.0","id":${JSON.stringify(call.id)},"result":{"hits":[],"pad":"${pad}`,
          tail: tails.then(() => '"}}'),
        },
      };
    });
    engines.push(big);
    const gw = await gateway([big.url], { maxBufferedUpstreamBytes: 1_000_000, engineTimeoutMs: 8_000 });
    const answers = await Promise.all([1, 2, 3, 4].map((i) => post(gw.url, retrieveMessage(i, { query: 'big', k: 1 }))));
    const bodies = answers.map((a) => a.json() as Json);
    const refused = bodies.filter((b) => JSON.stringify(b.error ?? {}).includes('too-large'));
    expect(refused.length).toBeGreaterThanOrEqual(2);
    expect(bodies.filter((b) => b.result !== undefined).length).toBeLessThanOrEqual(2);
    const after = (await post(gw.url, retrieveMessage(5, { query: 'small', k: 1 })).then((r) => r.json())) as Json;
    expect((after.result as Json).hits).toMatchObject([{ id: 'small' }]);
  });
});
