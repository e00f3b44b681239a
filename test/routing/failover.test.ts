/**
 * Liveness fallback of routed calls: a read fails over to the next candidate on a retryable
 * error or a dead engine, within the deadline; an embed call only to an engine with the same
 * model; a write never fails over; an engine the client names is never substituted.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeControl, type GatewayHandle } from '../support/processes.js';
import { emittedErrors, schemaCrossCheck, schemaCrossCheckBanner } from '../support/spec-validator.js';
import { errorOf, Fleet, metaOf, rpc, withRetrieve, type TestEngine } from './fixtures.js';

const fleet = new Fleet();
let primary: TestEngine;
let otherModel: TestEngine;
let standby: TestEngine;
let gw: GatewayHandle;

beforeAll(async () => {
  const model = { dimension: 8, identity: 'shared-model' };
  [primary, otherModel, standby] = await Promise.all([
    fleet.engine('primary', withRetrieve({ embed: model, rerank: { methods: ['cross-encoder'] }, index: { writable: true } })),
    fleet.engine(
      'other-model',
      withRetrieve({ embed: { dimension: 8, identity: 'different-model' }, rerank: { methods: ['cross-encoder'] } }),
    ),
    fleet.engine('standby', withRetrieve({ embed: model, rerank: { methods: ['cross-encoder'] }, index: { writable: true } })),
  ]);
  gw = await fleet.gateway(
    [
      { engine: primary, priority: 10 },
      { engine: otherModel, priority: 5 },
      { engine: standby, priority: 1 },
    ],
    { retry: { budgetRatio: 0, minPerWindow: 0 } },
  );
});

afterAll(async () => {
  await fleet.stop();
  console.log(schemaCrossCheckBanner());
  expect(emittedErrors()).toEqual([]);
});

describe('read failover', () => {
  it('moves to the next candidate when the chosen engine answers a retryable error', async () => {
    writeControl(primary.control, { fault: 'fail', faultAll: true, failCode: -32010 });
    const res = await rpc<{ scores: number[] }>(gw.url, 'rerank', { query: 'graph', passages: ['graph', 'cache'] });
    expect(res.result!.scores).toHaveLength(2);
    expect(metaOf(res).engine).toBe('other-model');
    expect(metaOf(res).failedOver).toEqual([expect.objectContaining({ engine: 'primary', code: -32010 })]);
  });

  it('moves past an engine whose circuit breaker is open without calling it', async () => {
    const [shaky, backup] = await Promise.all([
      fleet.engine('shaky', withRetrieve({ rerank: { methods: ['cross-encoder'] } })),
      fleet.engine('backup', withRetrieve({ rerank: { methods: ['cross-encoder'] } })),
    ]);
    const tripwire = await fleet.gateway(
      [
        { engine: shaky, priority: 2 },
        { engine: backup, priority: 1 },
      ],
      {
        retry: { budgetRatio: 0, minPerWindow: 0 },
        breaker: { volumeThreshold: 1, errorThresholdPercentage: 1, resetTimeoutMs: 60_000 },
      },
    );
    writeControl(shaky.control, { fault: 'fail', faultAll: true, failCode: -32010 });
    const first = await rpc(tripwire.url, 'rerank', { query: 'q', passages: ['a'] });
    expect(metaOf(first).engine).toBe('backup');
    const calls = shaky.requests('rerank').length;
    const second = await rpc(tripwire.url, 'rerank', { query: 'q', passages: ['a'] });
    expect(metaOf(second).engine).toBe('backup');
    expect(metaOf(second).failedOver).toEqual([expect.objectContaining({ engine: 'shaky', reason: 'circuit-open' })]);
    expect(shaky.requests('rerank')).toHaveLength(calls);
  });

  it('does not fail over on a caller error (-32602 is not retryable)', async () => {
    writeControl(primary.control, { fault: 'fail', faultAll: true, failCode: -32602 });
    const res = await rpc(gw.url, 'rerank', { query: 'graph', passages: ['graph', 'cache'] });
    expect(errorOf(res)).toMatchObject({ code: -32602, data: { engine: 'primary' } });
    writeControl(primary.control, { fault: 'ok' });
  });

  it('embed fails over only to an engine with the same model (§15.7)', async () => {
    writeControl(primary.control, { fault: 'fail', faultAll: true, failCode: -32011 });
    const before = otherModel.requests('embed').length;
    const res = await rpc<{ vectors: number[][] }>(gw.url, 'embed', { inputs: ['swept wing', 'flutter'] });
    expect(res.result!.vectors).toHaveLength(2);
    expect(metaOf(res).engine).toBe('standby');
    expect(otherModel.requests('embed')).toHaveLength(before);
    writeControl(primary.control, { fault: 'ok' });
  });

  it('moves past a dead engine; an engine the client named is not substituted', async () => {
    await primary.stop();
    const res = await rpc<{ vectors: number[][] }>(gw.url, 'embed', { inputs: ['flutter'] });
    expect(metaOf(res).engine).toBe('standby');
    expect(metaOf(res).failedOver?.[0]).toMatchObject({ engine: 'primary', code: -32010 });
    const pinned = await rpc(gw.url, 'embed', { inputs: ['flutter'], _meta: { 'x-rcpgw': { engine: 'primary' } } });
    expect(errorOf(pinned)).toMatchObject({ code: -32010, data: { engine: 'primary' } });
  });

  it('never fails a write over to another engine', async () => {
    const before = standby.requests('index/add').length;
    const res = await rpc(gw.url, 'index/add', { documents: [{ id: 'w1', text: 'hypersonic intake' }] });
    expect(errorOf(res)).toMatchObject({
      code: -32010,
      data: { engine: 'primary', writes: [{ engine: 'primary', ok: false, code: -32010 }] },
    });
    expect(standby.requests('index/add')).toHaveLength(before);
  });
});

schemaCrossCheck();
