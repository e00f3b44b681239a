/**
 * Retrieve options decided at the gateway, before any engine is called (§7.7 strict by default,
 * §8, §14.1 #4), against real engine processes: one engine that ignores options it does not know
 * and one that rejects them (like the reference SDK servers), and two that filter.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { emittedErrors, schemaCrossCheckBanner } from '../support/spec-validator.js';
import type { GatewayHandle } from '../support/processes.js';
import { errorOf, Fleet, rpc, withRetrieve, type TestEngine } from '../routing/fixtures.js';

const QUERY = 'retrieval ranking fusion vector sparse graph';
const fleet = new Fleet();
let lax: TestEngine; // ignores unknown options
let strict: TestEngine; // rejects unadvertised options (-32005 / -32602)
let filterA: TestEngine;
let filterB: TestEngine;
let plain: GatewayHandle; // lax + strict: no filter, no rerank, no mmr
let filtering: GatewayHandle; // filterA + filterB: both filter on `len`

interface Info {
  capabilities: Record<string, Record<string, unknown>>;
  _meta: { conformance: string; 'x-rcpgw': { retrieveOptions: { honoured: string[]; refused: string[]; forwarded: string[] } } };
}
interface Retrieved {
  hits: Array<{ id: string; text: string }>;
  usage: { notes?: string[] };
  _meta: { engines: string[]; degraded?: unknown[] };
}

const FILTER_CAPS = { filter: { fields: { len: 'int' }, operators: ['eq', 'gte', 'lte', 'in'] } };

beforeAll(async () => {
  [lax, strict, filterA, filterB] = await Promise.all([
    fleet.engine('lax', withRetrieve()),
    fleet.engine('strict', withRetrieve(), ['--strict-options']),
    fleet.engine('fa', withRetrieve(FILTER_CAPS), ['--strict-options']),
    fleet.engine('fb', withRetrieve(FILTER_CAPS), ['--strict-options', '--id-prefix', 'b-']),
  ]);
  [plain, filtering] = await Promise.all([
    fleet.gateway([{ engine: lax }, { engine: strict }]),
    fleet.gateway([{ engine: filterA }, { engine: filterB }, { engine: lax }], { routes: { retrieve: ['fa', 'fb'] } }),
  ]);
});

afterAll(async () => {
  await fleet.stop();
  console.log(schemaCrossCheckBanner());
  expect(emittedErrors()).toEqual([]);
});

const retrieveCalls = (...engines: TestEngine[]): number => engines.reduce((n, e) => n + e.requests('retrieve').length, 0);

describe('what the gateway advertises is what it honours', () => {
  it('advertises no filter/rerank/mmr over engines that lack them, and says so in _meta', async () => {
    const info = await rpc<Info>(plain.url, 'info', {});
    const { capabilities, _meta } = info.result!;
    expect(capabilities.filter).toBeUndefined();
    expect(capabilities.retrieve).not.toHaveProperty('mmr');
    expect(capabilities.retrieve).not.toHaveProperty('rerankBuiltin');
    expect(_meta.conformance).toBe('L0');
    expect(_meta['x-rcpgw'].retrieveOptions.refused).toEqual(['filter', 'fusion', 'level', 'mmr', 'rerank', 'tokenBudget']);
    expect(_meta['x-rcpgw'].retrieveOptions.honoured).toEqual(['candidateK', 'modality', 'mode', 'unit']);
    expect(_meta['x-rcpgw'].retrieveOptions.forwarded).toEqual(['sessionId']);
  });

  it('advertises filter with the fields and operators every engine of the fan-out lists', async () => {
    const info = await rpc<Info>(filtering.url, 'info', {});
    expect(info.result!.capabilities.filter).toEqual({ fields: { len: 'int' }, operators: ['eq', 'gte', 'in', 'lte'] });
    expect(info.result!._meta['x-rcpgw'].retrieveOptions.honoured).toContain('filter');
  });
});

describe('strict (the default): refused before any engine is called', () => {
  it.each([
    ['filter', { filter: { field: 'len', op: 'gte', value: 3 } }],
    ['rerank', { rerank: { method: 'cross-encoder', topN: 10 } }],
    ['mmr', { mmr: { lambda: 0.5 } }],
    ['fusion', { fusion: { method: 'rrf' } }],
    ['tokenBudget', { tokenBudget: 500 }],
    ['unit', { unit: 'community' }],
    ['level', { level: 2 }],
  ])('%s → -32005 naming data.option', async (option, extra) => {
    const before = retrieveCalls(lax, strict);
    const reply = await rpc(plain.url, 'retrieve', { query: QUERY, k: 3, ...extra });
    expect(errorOf(reply)).toMatchObject({ code: -32005, data: { option } });
    expect(retrieveCalls(lax, strict)).toBe(before);
  });

  it('a filter on a field no engine advertises is -32602 naming data.field, even with strict: false', async () => {
    const before = retrieveCalls(filterA, filterB);
    for (const strictFlag of [true, false]) {
      const reply = await rpc(filtering.url, 'retrieve', {
        query: QUERY,
        k: 3,
        strict: strictFlag,
        filter: {
          and: [
            { field: 'len', op: 'gte', value: 2 },
            { field: 'lang', op: 'eq', value: 'en' },
          ],
        },
      });
      expect(errorOf(reply)).toMatchObject({ code: -32602, data: { field: 'filter.lang' } });
    }
    expect(retrieveCalls(filterA, filterB)).toBe(before);
  });

  it('an operator outside the common set is -32005 (filter.op)', async () => {
    const reply = await rpc(filtering.url, 'retrieve', { query: QUERY, k: 3, filter: { field: 'len', op: 'ne', value: 3 } });
    expect(errorOf(reply)).toMatchObject({ code: -32005, data: { option: 'filter.op' } });
  });
});

describe('honoured and lenient', () => {
  it('a filter every engine advertises is forwarded and applied by each engine', async () => {
    const reply = await rpc<Retrieved>(filtering.url, 'retrieve', { query: QUERY, k: 10, filter: { field: 'len', op: 'gte', value: 5 } });
    const { hits, _meta } = reply.result!;
    expect(_meta.engines).toEqual(['fa', 'fb']);
    expect(hits.length).toBeGreaterThan(0);
    for (const hit of hits) expect(hit.text.split(' ').length).toBeGreaterThanOrEqual(5);
    expect(filterA.requests('retrieve').at(-1)!.params).toMatchObject({ filter: { field: 'len', op: 'gte', value: 5 } });
  });

  it('strict: false drops what is not honoured for every engine, with a usage.notes line each', async () => {
    const reply = await rpc<Retrieved>(plain.url, 'retrieve', {
      query: QUERY,
      k: 3,
      strict: false,
      filter: { field: 'len', op: 'gte', value: 3 },
      mmr: { lambda: 0.3 },
      tokenBudget: 100,
    });
    const { hits, usage, _meta } = reply.result!;
    expect(hits).toHaveLength(3);
    expect(_meta.degraded).toBeUndefined(); // the strict engine never saw what it would refuse
    expect(usage.notes).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^filter dropped: /),
        expect.stringMatching(/^mmr dropped: /),
        expect.stringMatching(/^tokenBudget dropped: /),
      ]),
    );
    for (const engine of [lax, strict]) {
      const params = engine.requests('retrieve').at(-1)!.params!;
      expect(params).not.toHaveProperty('filter');
      expect(params).not.toHaveProperty('mmr');
      expect(params).not.toHaveProperty('tokenBudget');
    }
  });

  it('forwards sessionId (a hint) and bounds each engine by candidateK', async () => {
    const reply = await rpc<Retrieved>(plain.url, 'retrieve', { query: QUERY, k: 3, candidateK: 5, sessionId: 'trajectory-1' });
    expect(reply.result!.hits).toHaveLength(3);
    for (const engine of [lax, strict]) {
      expect(engine.requests('retrieve').at(-1)!.params).toMatchObject({ sessionId: 'trajectory-1', candidateK: 5, k: 5 });
    }
  });

  it('a request restricted to filtering engines may filter where the whole fan-out could not', async () => {
    const mixed = await fleet.gateway([{ engine: lax }, { engine: filterA }]);
    const filter = { field: 'len', op: 'lte', value: 3 };
    expect(errorOf(await rpc(mixed.url, 'retrieve', { query: QUERY, k: 3, filter }))).toMatchObject({ code: -32005 });
    const only = await rpc<Retrieved>(mixed.url, 'retrieve', { query: QUERY, k: 3, filter, _meta: { 'x-rcpgw': { engines: ['fa'] } } });
    expect(only.result!._meta.engines).toEqual(['fa']);
    for (const hit of only.result!.hits) expect(hit.text.split(' ').length).toBeLessThanOrEqual(3);
  });

  it('an image query goes only to engines that accept images; none → -32005 (modality)', async () => {
    const image = { type: 'image', mimeType: 'image/png', uri: 'https://example.invalid/p.png' };
    const reply = await rpc(plain.url, 'retrieve', { query: [image], k: 3 });
    expect(errorOf(reply)).toMatchObject({ code: -32005, data: { option: 'modality' } });
  });
});
