/**
 * Routing of non-fusable methods in-process (§7, §12): the highest-priority capable engine, an
 * engine the client names (vendor `_meta` or header), a configured route, -32005 for an option
 * no engine advertises, and fail-over of reads (never of writes) to the next candidate.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { RcpError } from '../../src/core/protocol/errors.js';
import type { JsonObject } from '../../src/core/protocol/jsonrpc.js';
import { FakeEngine } from '../support/fake-engine.js';
import { startInProcess, type InProcessGateway } from '../support/in-process.js';

let running: InProcessGateway | undefined;
afterEach(async () => {
  await running?.stop();
  running = undefined;
});

const NO_RETRY = { retry: { budgetRatio: 0, minPerWindow: 0 } };
const reranker = (id: string, methods: string[] = ['cross-encoder']): FakeEngine =>
  new FakeEngine(id, {
    capabilities: { rerank: { methods } },
    methods: { rerank: (params) => ({ order: [0], servedBy: id, method: params.method ?? null }) },
  });

async function gatewayOver(engines: FakeEngine[], options: Parameters<typeof startInProcess>[1] = {}): Promise<InProcessGateway> {
  running = await startInProcess(engines, options);
  return running;
}

const rerank = (extra: JsonObject = {}): JsonObject => ({ query: 'q', passages: ['a', 'b'], ...extra });
const meta = (result: JsonObject): { engine: string; routedBy: string; failedOver?: Array<{ engine: string; code: number }> } =>
  result._meta as { engine: string; routedBy: string; failedOver?: Array<{ engine: string; code: number }> };

async function rejection(promise: Promise<unknown>): Promise<RcpError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(RcpError);
  return err as RcpError;
}

describe('choosing the engine', () => {
  it('picks the capable engine of highest priority, ties by id, and names it in _meta', async () => {
    const low = reranker('low');
    const high = reranker('high');
    const also = reranker('also-high');
    const gw = await gatewayOver([low, high, also, new FakeEngine('retriever')], {
      engines: { high: { priority: 5 }, 'also-high': { priority: 5 } },
    });
    const result = await gw.call('rerank', rerank());
    expect(result.servedBy).toBe('also-high');
    expect(meta(result)).toMatchObject({ engine: 'also-high', routedBy: 'priority' });
    expect(low.calls).toEqual([]);
    expect(high.calls).toEqual([]);
  });

  it('honours an engine named in _meta["x-rcpgw"].engine or the x-rcpgw-engine header, _meta first', async () => {
    const a = reranker('a');
    const b = reranker('b');
    const gw = await gatewayOver([a, b], { engines: { a: { priority: 9 } } });
    expect((await gw.call('rerank', rerank({ _meta: { 'x-rcpgw': { engine: 'b' } } }))).servedBy).toBe('b');
    expect((await gw.call('rerank', rerank(), { headers: { 'x-rcpgw-engine': 'b' } })).servedBy).toBe('b');
    const both = await gw.call('rerank', rerank({ _meta: { 'x-rcpgw': { engine: 'a' } } }), { headers: { 'x-rcpgw-engine': 'b' } });
    expect(meta(both)).toMatchObject({ engine: 'a', routedBy: 'explicit' });
    const unknown = await rejection(gw.call('rerank', rerank({ _meta: { 'x-rcpgw': { engine: 'nope' } } })));
    expect(unknown.code).toBe(-32602);
  });

  it('follows a configured route in its order, over priority', async () => {
    const a = reranker('a');
    const b = reranker('b');
    const gw = await gatewayOver([a, b], { engines: { a: { priority: 9 } }, gateway: { routes: { rerank: ['b', 'a'] } } });
    expect(meta(await gw.call('rerank', rerank()))).toMatchObject({ engine: 'b', routedBy: 'route' });
  });

  it('strips the vendor key from what the engine receives', async () => {
    const a = reranker('a');
    const gw = await gatewayOver([a]);
    await gw.call('rerank', rerank({ _meta: { 'x-rcpgw': { engine: 'a' } } }));
    expect((a.callsOf('rerank')[0]!.params._meta as JsonObject)['x-rcpgw']).toBeUndefined();
  });
});

describe('options no engine advertises', () => {
  it('answer -32005 naming the option before any engine is asked, and skip engines lacking it', async () => {
    const plain = reranker('plain', ['cross-encoder']);
    const llm = reranker('llm', ['cross-encoder', 'llm']);
    const gw = await gatewayOver([plain, llm], { engines: { plain: { priority: 9 } } });
    expect((await gw.call('rerank', rerank({ method: 'llm' }))).servedBy).toBe('llm');
    const err = await rejection(gw.call('rerank', rerank({ method: 'colbert' })));
    expect(err.code).toBe(-32005);
    expect(err.data?.option).toBe('method');
    expect(plain.calls).toEqual([]);
    expect(llm.callsOf('rerank')).toHaveLength(1);
    // Naming an engine that lacks the option is the same error, from that engine's metadata.
    expect((await rejection(gw.call('rerank', rerank({ method: 'llm', _meta: { 'x-rcpgw': { engine: 'plain' } } })))).code).toBe(-32005);
  });

  it('answer -32003 through the session for a method no engine advertises', async () => {
    const gw = await gatewayOver([new FakeEngine('retriever')]);
    const { response } = await gw.request('rerank', rerank());
    expect(response).toMatchObject({ error: { code: -32003 } });
  });
});

describe('fail-over', () => {
  it('moves a read to the next candidate on a retryable error and reports what it tried', async () => {
    const first = reranker('first').fail(-32010);
    const second = reranker('second');
    const gw = await gatewayOver([first, second], { engines: { first: { priority: 2 } }, gateway: NO_RETRY });
    const result = await gw.call('rerank', rerank());
    expect(result.servedBy).toBe('second');
    expect(meta(result).failedOver).toEqual([expect.objectContaining({ engine: 'first', code: -32010 })]);
  });

  it('does not fail over on a caller error: the engine said the request is wrong', async () => {
    const first = reranker('first').fail(-32602);
    const second = reranker('second');
    const gw = await gatewayOver([first, second], { engines: { first: { priority: 2 } }, gateway: NO_RETRY });
    const err = await rejection(gw.call('rerank', rerank()));
    expect(err.code).toBe(-32602);
    expect(second.calls).toEqual([]);
  });

  it('never fails a write over to another engine', async () => {
    const index = { index: {} };
    const writerA = new FakeEngine('wa', { capabilities: index }).fail(-32010);
    const writerB = new FakeEngine('wb', { capabilities: index });
    const gw = await gatewayOver([writerA, writerB], {
      engines: { wa: { writer: true, priority: 2 }, wb: { writer: true } },
      gateway: NO_RETRY,
    });
    const err = await rejection(gw.call('index/add', { documents: [{ id: 'd', text: 't' }] }));
    expect(err.code).toBe(-32010);
    expect(writerB.calls).toEqual([]);
  });
});
