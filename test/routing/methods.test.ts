/**
 * Every §7 method through the gateway against real test engines: each answer comes from one
 * engine named in `_meta.engine`, options the target does not advertise are -32005 with
 * `error.data.option`, explicit targets (vendor `_meta` key and header), engine-scoped
 * memory ids, fused graph ops, and the capabilities the gateway derives from its engines.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { emittedErrors, schemaCrossCheck, schemaCrossCheckBanner } from '../support/spec-validator.js';
import type { GatewayHandle } from '../support/processes.js';
import { errorOf, Fleet, metaOf, rpc, withRetrieve, type TestEngine } from './fixtures.js';

const fleet = new Fleet();
let alpha: TestEngine;
let beta: TestEngine;
let gw: GatewayHandle;

beforeAll(async () => {
  [alpha, beta] = await Promise.all([
    fleet.engine(
      'alpha',
      withRetrieve({
        embed: { dimension: 8, identity: 'model-one', encodings: ['json', 'f32-base64'] },
        sparseEmbed: { identity: 'splade', vocabulary: 1000 },
        multiVector: { dimension: 4, identity: 'colbert-small', similarity: 'dot' },
        rerank: { methods: ['cross-encoder'], maxCandidates: 50 },
        transform: { methods: ['rewrite', 'multi-query'] },
        graph: { ops: ['local', 'drift', 'communities', 'neighbors'] },
        index: { writable: true },
        feedback: {},
        memory: { scopes: ['global'] },
        'x-test': { echo: true },
      }),
    ),
    fleet.engine(
      'beta',
      withRetrieve({
        embed: { dimension: 4, identity: 'model-two' },
        rerank: { methods: ['colbert'], maxCandidates: 20 },
        graph: { ops: ['local', 'drift'] },
        index: { writable: true },
      }),
      ['--reverse'],
    ),
  ]);
  gw = await fleet.gateway([
    { engine: alpha, priority: 5 },
    { engine: beta, priority: 1 },
  ]);
});

afterAll(async () => {
  await fleet.stop();
  console.log(schemaCrossCheckBanner());
  expect(emittedErrors()).toEqual([]);
});

describe('capabilities derived from the engines (§6, §16.4)', () => {
  it('advertises every routable capability with metadata that holds whichever engine serves', async () => {
    const info = await rpc<{ capabilities: Record<string, Record<string, unknown>> }>(gw.url, 'info', {});
    const caps = info.result!.capabilities;
    // x-rcpgw: the gateway's own vendor method x-rcpgw/catalog/watch (serve; docs/mcp.md).
    expect(Object.keys(caps).sort()).toEqual(
      [
        'catalog',
        'embed',
        'feedback',
        'graph',
        'index',
        'memory',
        'multiVector',
        'pagination',
        'rerank',
        'retrieve',
        'sparseEmbed',
        'streaming',
        'transform',
        'x-rcpgw',
        'x-test',
      ].sort(),
    );
    expect(caps['x-rcpgw']).toEqual({ catalogWatch: {} });
    expect(caps.embed).toEqual({}); // two models: no dimension/identity can be promised
    expect(caps.sparseEmbed).toEqual({ identity: 'splade', vocabulary: 1000 }); // one provider: its metadata
    expect(caps.rerank).toEqual({ methods: ['colbert', 'cross-encoder'], maxCandidates: 20 });
    expect(caps.graph).toEqual({ ops: ['communities', 'drift', 'local', 'neighbors'] });
    expect(caps.index).toEqual({ writable: true });
    expect(caps.memory).toEqual({ scopes: ['global'] });
    expect(caps.catalog).toEqual({ engines: 2 });
  });
});

describe('routed reads name the engine that served them', () => {
  it('embed goes to the highest-priority embedder, whole: never split across engines', async () => {
    const before = beta.requests('embed').length;
    const res = await rpc<{ vectors: number[][]; dimension: number }>(gw.url, 'embed', {
      inputs: ['boundary layer', 'shock wave', 'heat transfer'],
    });
    expect(res.result!.vectors).toHaveLength(3);
    expect(res.result!.vectors.every((v) => v.length === 8)).toBe(true);
    expect(metaOf(res)).toMatchObject({ engine: 'alpha', routedBy: 'priority' });
    const seen = alpha.requests('embed').at(-1)!;
    expect((seen.params as { inputs: string[] }).inputs).toHaveLength(3);
    expect(beta.requests('embed')).toHaveLength(before);
  });

  it('f32-base64 only where embed.encodings lists it (§7.3.1), else -32005', async () => {
    const ok = await rpc<{ vectors: string[]; encoding: string; dimension: number }>(gw.url, 'embed', {
      inputs: ['wing'],
      encoding: 'f32-base64',
    });
    expect(ok.result).toMatchObject({ encoding: 'f32-base64', dimension: 8 });
    expect(Buffer.from(ok.result!.vectors[0]!, 'base64')).toHaveLength(32);
    const refused = await rpc(gw.url, 'embed', { inputs: ['wing'], encoding: 'f32-base64', _meta: { 'x-rcpgw': { engine: 'beta' } } });
    expect(errorOf(refused)).toMatchObject({ code: -32005, data: { option: 'encoding' } });
  });

  it('an explicit target by vendor _meta key or by header wins over priority', async () => {
    const byMeta = await rpc<{ vectors: number[][] }>(gw.url, 'embed', { inputs: ['nozzle'], _meta: { 'x-rcpgw': { engine: 'beta' } } });
    expect(metaOf(byMeta)).toMatchObject({ engine: 'beta', routedBy: 'explicit' });
    expect(byMeta.result!.vectors[0]).toHaveLength(4);
    const byHeader = await rpc(gw.url, 'embed', { inputs: ['nozzle'] }, { headers: { 'x-rcpgw-engine': 'beta' } });
    expect(metaOf(byHeader)).toMatchObject({ engine: 'beta', routedBy: 'explicit' });
    // The gateway's own vendor key is not forwarded upstream.
    const forwarded = beta.requests('embed').at(-2)!.params as { _meta: Record<string, unknown> };
    expect(forwarded._meta['x-rcpgw']).toBeUndefined();
    expect(errorOf(await rpc(gw.url, 'embed', { inputs: ['x'], _meta: { 'x-rcpgw': { engine: 'nope' } } }))).toMatchObject({
      code: -32602,
      data: { field: '_meta.x-rcpgw.engine' },
    });
    const lacking = await rpc(gw.url, 'feedback', { signals: [{ hitId: 'd1', used: true }], _meta: { 'x-rcpgw': { engine: 'beta' } } });
    expect(errorOf(lacking)).toMatchObject({ code: -32005, data: { option: '_meta.x-rcpgw.engine' } });
  });

  it('embed/sparse and embed/multi go to the engine that has them', async () => {
    const sparse = await rpc<{ sparse: Array<{ indices: number[]; values: number[] }> }>(gw.url, 'embed/sparse', {
      texts: ['supersonic flow'],
    });
    expect(sparse.result!.sparse[0]!.indices.length).toBeGreaterThan(0);
    expect(metaOf(sparse).engine).toBe('alpha');
    const multi = await rpc<{ matrices: number[][][]; dimension: number }>(gw.url, 'embed/multi', { inputs: ['supersonic flow'] });
    expect(multi.result!.dimension).toBe(4);
    expect(multi.result!.matrices[0]).toHaveLength(2);
    expect(metaOf(multi).engine).toBe('alpha');
  });

  it('rerank picks an engine advertising the method; an unadvertised method is -32005', async () => {
    const passages = ['graph index', 'cache token', 'graph fusion'];
    const ce = await rpc<{ scores: number[] }>(gw.url, 'rerank', { query: 'graph', passages, method: 'cross-encoder' });
    expect(ce.result!.scores).toHaveLength(3);
    expect(metaOf(ce).engine).toBe('alpha');
    const colbert = await rpc(gw.url, 'rerank', { query: 'graph', passages, method: 'colbert' });
    expect(metaOf(colbert).engine).toBe('beta'); // lower priority, but the only one listing colbert
    expect(errorOf(await rpc(gw.url, 'rerank', { query: 'graph', passages, method: 'llm' }))).toMatchObject({
      code: -32005,
      data: { option: 'method' },
    });
  });

  it('query/transform checks the method against transform.methods', async () => {
    const ok = await rpc<{ queries: string[] }>(gw.url, 'query/transform', { query: 'delta wings', method: 'multi-query', n: 2 });
    expect(ok.result!.queries).toHaveLength(2);
    expect(metaOf(ok).engine).toBe('alpha');
    expect(errorOf(await rpc(gw.url, 'query/transform', { query: 'delta wings', method: 'hyde' }))).toMatchObject({
      code: -32005,
      data: { option: 'method' },
    });
  });

  it('x-<vendor>/ extension methods route to an engine advertising the vendor key', async () => {
    const res = await rpc<{ echo: Record<string, unknown> }>(gw.url, 'x-test/echo', {
      say: 'hi',
      _meta: { 'x-rcpgw': { engine: 'alpha' } },
    });
    expect(res.result!.echo.say).toBe('hi');
    expect(metaOf(res).engine).toBe('alpha');
    expect((res.result!.echo._meta as Record<string, unknown>)['x-rcpgw']).toBeUndefined();
    expect(errorOf(await rpc(gw.url, 'x-other/thing', {})).code).toBe(-32003);
  });

  it('feedback goes to the engine that accepts it', async () => {
    const res = await rpc<{ accepted: number }>(gw.url, 'feedback', {
      query: 'q',
      signals: [
        { hitId: 'd1', used: true },
        { hitId: 'd2', helpful: false },
      ],
    });
    expect(res.result!.accepted).toBe(2);
    expect(metaOf(res).engine).toBe('alpha');
  });
});

describe('memory: scopes and engine-scoped ids (§7.17)', () => {
  it('checks the scope, and routes a memoryId back to the engine that minted it', async () => {
    expect(errorOf(await rpc(gw.url, 'memory/build', { scope: 'session' }))).toMatchObject({ code: -32005, data: { option: 'scope' } });
    const built = await rpc<{ memoryId: string }>(gw.url, 'memory/build', { scope: 'global' });
    const memoryId = built.result!.memoryId;
    expect(memoryId).toMatch(/^rcpgw~alpha~/);
    const recall = await rpc<{ clues: unknown[] }>(gw.url, 'memory/recall', { query: 'graph', memoryId, n: 2 });
    expect(recall.result!.clues).toHaveLength(2);
    expect(metaOf(recall)).toMatchObject({ engine: 'alpha', routedBy: 'handle' });
    const sent = alpha.requests('memory/recall').at(-1)!.params as { memoryId: string };
    expect(`rcpgw~alpha~${sent.memoryId}`).toBe(memoryId);
    expect(errorOf(await rpc(gw.url, 'memory/recall', { query: 'graph', memoryId: 'rcpgw~gone~m1' })).code).toBe(-32015);
  });
});

describe('writes (§7.10, §7.11)', () => {
  it('index/add and index/delete go to one writer and report the outcome', async () => {
    const add = await rpc<{ ids: string[] }>(gw.url, 'index/add', { documents: [{ id: 'new-1', text: 'laminar separation bubble' }] });
    expect(add.result!.ids).toEqual(['new-1']);
    expect(metaOf(add)).toMatchObject({ engine: 'alpha', writes: [{ engine: 'alpha', ok: true }] });
    expect(beta.requests('index/add')).toHaveLength(0);
    expect(errorOf(await rpc(gw.url, 'index/add', { documents: [{ text: 'x' }], chunk: true }))).toMatchObject({
      code: -32005,
      data: { option: 'chunk' },
    });
    const del = await rpc<{ deleted: number }>(gw.url, 'index/delete', { ids: ['new-1'] });
    expect(del.result!.deleted).toBe(1);
    expect(metaOf(del).engine).toBe('alpha');
  });
});

describe('graph (§7.9)', () => {
  it('fuses local/drift across the engines advertising the op, followups merged', async () => {
    const local = await rpc<{ hits: Array<{ id: string; meta: { engine: string } }>; _meta: { engines: string[] } }>(gw.url, 'graph', {
      op: 'local',
      query: 'graph index query',
      k: 4,
    });
    expect(local.result!.hits).toHaveLength(4);
    expect(local.result!._meta.engines).toEqual(['alpha', 'beta']);
    expect(new Set(local.result!.hits.map((h) => h.meta.engine))).toEqual(new Set(['alpha', 'beta']));
    const drift = await rpc<{ hits: unknown[]; followups: string[] }>(gw.url, 'graph', { op: 'drift', query: 'graph index', k: 3 });
    expect(drift.result!.hits).toHaveLength(3);
    expect(drift.result!.followups).toEqual(['graph index follow-up 1', 'graph index follow-up 2']);
  });

  it('routes communities/neighbors to one engine and refuses an op nobody advertises', async () => {
    const communities = await rpc<{ communities: unknown[] }>(gw.url, 'graph', { op: 'communities' });
    expect(communities.result!.communities.length).toBeGreaterThan(0);
    expect(metaOf(communities).engine).toBe('alpha');
    const neighbors = await rpc<{ nodes: unknown[]; edges: unknown[] }>(gw.url, 'graph', { op: 'neighbors', seedIds: ['d1'], k: 3 });
    expect(neighbors.result!.nodes.length).toBeGreaterThan(0);
    expect(errorOf(await rpc(gw.url, 'graph', { op: 'global', query: 'x' }))).toMatchObject({ code: -32005, data: { option: 'op' } });
  });
});

schemaCrossCheck();
