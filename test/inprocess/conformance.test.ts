/**
 * Conformance with engines and clients written by others, in-process (the e2e twins are in
 * test/conformance/): retrieve options decided before any engine is called (§7.7, §8), client
 * errors answered as such (§12.2), a gateway exception as -32603 (never an engine's `malformed`),
 * the §16.2 hop budget on every forwarded method, and a fused order independent of `k` up to the
 * fusion depth.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { RcpError } from '../../src/core/protocol/errors.js';
import type { JsonObject } from '../../src/core/protocol/jsonrpc.js';
import { FakeEngine, type FakeHit } from '../support/fake-engine.js';
import { startInProcess, type InProcessGateway } from '../support/in-process.js';

let running: InProcessGateway | undefined;
afterEach(async () => {
  await running?.stop();
  running = undefined;
});

async function over(engines: FakeEngine[], options: Parameters<typeof startInProcess>[1] = {}): Promise<InProcessGateway> {
  running = await startInProcess(engines, options);
  return running;
}

async function rejection(promise: Promise<unknown>): Promise<RcpError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(RcpError);
  return err as RcpError;
}

type Retrieved = { hits: Array<{ id: string; score: number }>; usage: { notes?: string[] }; _meta: { degraded?: unknown[] } };

describe('retrieve options', () => {
  it('refuses an option one engine lacks before calling any, and honours it when all have it', async () => {
    const a = new FakeEngine('a', { capabilities: { retrieve: { maxK: 50, mmr: true } } });
    const b = new FakeEngine('b', { capabilities: { retrieve: { maxK: 50 } } });
    const gw = await over([a, b]);
    const err = await rejection(gw.call('retrieve', { query: 'q', k: 3, mmr: { lambda: 0.5 } }));
    expect(err).toMatchObject({ code: -32005, data: { option: 'mmr' } });
    expect(a.callsOf('retrieve')).toEqual([]);
    const only = (await gw.call('retrieve', {
      query: 'q',
      k: 3,
      mmr: { lambda: 0.5 },
      _meta: { 'x-rcpgw': { engines: ['a'] } },
    })) as Retrieved;
    expect(only.hits).toHaveLength(3);
    expect(a.callsOf('retrieve')[0]!.params.mmr).toEqual({ lambda: 0.5 });
  });

  it('advertises the filter fields common to the fan-out, typed only where the types agree', async () => {
    const a = new FakeEngine('a', { capabilities: { retrieve: {}, filter: { fields: { lang: 'keyword', year: 'int' } } } });
    const b = new FakeEngine('b', {
      capabilities: { retrieve: {}, filter: { fields: { lang: 'keyword', year: 'date', tag: 'keyword' } } },
    });
    const gw = await over([a, b]);
    expect(gw.gateway.describe().capabilities.filter).toEqual({
      fields: { lang: 'keyword' },
      operators: expect.arrayContaining(['eq', 'in']),
    });
  });
});

describe('client errors', () => {
  it('every engine rejecting → the code most engines gave, retryable: false, each engine listed', async () => {
    const a = new FakeEngine('a').fail(-32602, { field: 'query' });
    const b = new FakeEngine('b').fail(-32602, { field: 'query' });
    const c = new FakeEngine('c').fail(-32005, { option: 'x' });
    const gw = await over([a, b, c]);
    const err = await rejection(gw.call('retrieve', { query: 'q', k: 3 }));
    expect(err.code).toBe(-32602);
    expect(err.data).toMatchObject({ retryable: false, field: 'query' });
    expect((err.data!.engines as JsonObject[]).map((e) => [e.engine, e.code])).toEqual([
      ['a', -32602],
      ['b', -32602],
      ['c', -32005],
    ]);
  });

  it('a client error next to an engine fault with nothing answered is still -32010 (a retry may reach the faulty one)', async () => {
    const gw = await over([new FakeEngine('a').fail(-32602), new FakeEngine('b').fail(-32603)]);
    const err = await rejection(gw.call('retrieve', { query: 'q', k: 3 }));
    expect(err).toMatchObject({ code: -32010, data: { retryable: true } });
  });

  it("an exception in the gateway's own code is -32603, not the engine's malformed answer", async () => {
    const gw = await over([new FakeEngine('a')], {
      hooks: {
        onLeg: () => {
          throw new TypeError('hook bug');
        },
      },
    });
    const err = await rejection(gw.call('retrieve', { query: 'q', k: 3 }));
    expect(err).toMatchObject({ code: -32603, message: 'internal error' });
    expect(err.data).not.toHaveProperty('engines');
  });
});

describe('§16.2 hop budget on every forwarded call', () => {
  const caps = { retrieve: {}, graph: { ops: ['local', 'global'] }, embed: { dimension: 3, identity: 'm' }, index: { writable: true } };
  it.each([
    ['retrieve', { query: 'q' }],
    ['graph', { op: 'local', query: 'q' }],
    ['graph', { op: 'global', query: 'q' }],
    ['embed', { inputs: ['x'] }],
    ['index/add', { documents: [{ id: 'd', text: 't' }] }],
  ])('%s at depth 0 is refused and never forwarded', async (method, params) => {
    const engine = new FakeEngine('e', { capabilities: caps });
    const gw = await over([engine]);
    const err = await rejection(gw.call(method, { ...params, _meta: { federation: { depth: 0, path: ['up'] } } }));
    expect(err).toMatchObject({ code: -32010, data: { retryable: false } });
    expect(engine.calls.filter((call) => call.method !== 'initialize')).toEqual([]);
  });

  it('forwards depth − 1 and the path on routed methods and writes', async () => {
    const engine = new FakeEngine('e', { capabilities: caps });
    const gw = await over([engine], { gateway: { name: 'gw' } });
    await gw.call('embed', { inputs: ['x'], _meta: { federation: { depth: 2, path: ['up'] } } });
    await gw.call('index/add', { documents: [{ id: 'd', text: 't' }], _meta: { federation: { depth: 2, path: ['up'] } } });
    for (const method of ['embed', 'index/add']) {
      expect((engine.callsOf(method)[0]!.params._meta as JsonObject).federation).toEqual({ depth: 1, path: ['up', 'gw'] });
    }
  });
});

describe('fusion depth', () => {
  const list = (prefix: string, order: number[]): FakeHit[] =>
    order.map((n, i) => ({ id: `d${n}`, score: 100 - i, text: `${prefix}${n}` }));
  it('the answer for k₁ < k₂ ≤ fusionDepth is a prefix of the k₂ answer; every engine is asked the depth', async () => {
    const a = new FakeEngine('a', {
      hits: list(
        'a',
        Array.from({ length: 30 }, (_, i) => i),
      ),
    });
    const b = new FakeEngine('b', {
      hits: list(
        'b',
        Array.from({ length: 30 }, (_, i) => (i * 7) % 30),
      ),
    });
    const gw = await over([a, b], { gateway: { fusionDepth: 12 } });
    const answer = async (k: number): Promise<Retrieved['hits']> => ((await gw.call('retrieve', { query: 'q', k })) as Retrieved).hits;
    const full = await answer(12);
    for (let k = 1; k < 12; k++) expect(await answer(k)).toEqual(full.slice(0, k));
    expect(new Set([...a.callsOf('retrieve'), ...b.callsOf('retrieve')].map((call) => call.params.k))).toEqual(new Set([12]));
  });
});
