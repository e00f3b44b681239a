/**
 * Write routing (§7.10, §7.11): broadcast to every writable engine with per-engine outcomes in
 * `_meta.writes` and partial failure reported, configured writers, write routes, explicit
 * targets, and options checked on every target before anything is written.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeControl, type GatewayHandle } from '../support/processes.js';
import { emittedErrors, schemaCrossCheck, schemaCrossCheckBanner } from '../support/spec-validator.js';
import { errorOf, Fleet, metaOf, rpc, withRetrieve, type TestEngine } from './fixtures.js';

const fleet = new Fleet();
let w1: TestEngine;
let w2: TestEngine;
let w3: TestEngine;
let reader: TestEngine;
let broadcast: GatewayHandle;
let marked: GatewayHandle;

beforeAll(async () => {
  [w1, w2, w3, reader] = await Promise.all([
    fleet.engine('w1', withRetrieve({ index: { writable: true, chunking: true } })),
    fleet.engine('w2', withRetrieve({ index: { writable: true, chunking: true } })),
    fleet.engine('w3', withRetrieve({ index: { writable: true } })),
    fleet.engine('reader', withRetrieve({ index: { writable: false } })),
  ]);
  const engines = [
    { engine: w1, priority: 3 },
    { engine: w2, priority: 2 },
    { engine: w3, priority: 1 },
    { engine: reader, priority: 9 },
  ];
  // Injected failures must not open the breakers: these tests are about write routing.
  const breaker = { volumeThreshold: 1_000 };
  [broadcast, marked] = await Promise.all([
    fleet.gateway(engines, { broadcastWrites: true, breaker }),
    fleet.gateway(
      [
        { engine: w1, priority: 3 },
        { engine: w2, priority: 2, writer: true },
        { engine: w3, priority: 1, writer: true },
        { engine: reader, priority: 9 },
      ],
      { breaker },
    ),
  ]);
});

afterAll(async () => {
  await fleet.stop();
  console.log(schemaCrossCheckBanner());
  expect(emittedErrors()).toEqual([]);
});

describe('broadcast writes', () => {
  it('writes to every writable engine and reports each outcome', async () => {
    const res = await rpc<{ ids: string[] }>(broadcast.url, 'index/add', { documents: [{ id: 'b-1', text: 'transonic buffet onset' }] });
    expect(res.result!.ids).toEqual(['b-1']);
    expect(metaOf(res)).toMatchObject({ engine: 'w1', routedBy: 'broadcast' });
    expect(metaOf(res).writes).toEqual([
      { engine: 'w1', ok: true },
      { engine: 'w2', ok: true },
      { engine: 'w3', ok: true },
    ]);
    expect(metaOf(res).partial).toBeUndefined();
    expect(reader.requests('index/add')).toHaveLength(0); // index.writable false
    // Each writer now finds the document.
    for (const engine of [w1, w2, w3]) {
      const found = await rpc<{ hits: Array<{ id: string }> }>(broadcast.url, 'retrieve', {
        query: 'transonic buffet onset',
        k: 1,
        _meta: { 'x-rcpgw': { engine: engine.id } },
      });
      expect(found.result!.hits[0]!.id).toBe('b-1');
    }
  });

  it('reports a partial failure instead of hiding it', async () => {
    writeControl(w2.control, { fault: 'fail', faultAll: true, failCode: -32603 });
    const res = await rpc<{ deleted: number }>(broadcast.url, 'index/delete', { ids: ['b-1'] });
    expect(res.result!.deleted).toBe(1);
    expect(metaOf(res).partial).toBe(true);
    expect(metaOf(res).writes).toEqual([
      { engine: 'w1', ok: true },
      expect.objectContaining({ engine: 'w2', ok: false, code: -32603 }),
      { engine: 'w3', ok: true },
    ]);
  });

  it('fails with the first target error when every target fails, listing every outcome', async () => {
    writeControl(w1.control, { fault: 'fail', faultAll: true, failCode: -32011 });
    writeControl(w3.control, { fault: 'fail', faultAll: true, failCode: -32010 });
    const res = await rpc(broadcast.url, 'index/add', { documents: [{ id: 'b-2', text: 'x' }] });
    expect(errorOf(res)).toMatchObject({
      code: -32011,
      data: {
        engine: 'w1',
        writes: [
          { engine: 'w1', ok: false, code: -32011 },
          { engine: 'w2', ok: false, code: -32603 },
          { engine: 'w3', ok: false, code: -32010 },
        ],
      },
    });
    for (const engine of [w1, w2, w3]) writeControl(engine.control, { fault: 'ok' });
  });

  it('an explicit target overrides the broadcast', async () => {
    const before = w1.requests('index/add').length;
    const res = await rpc(
      broadcast.url,
      'index/add',
      { documents: [{ id: 'only-w3', text: 'y' }] },
      { headers: { 'x-rcpgw-engine': 'w3' } },
    );
    expect(metaOf(res)).toMatchObject({ engine: 'w3', routedBy: 'explicit', writes: [{ engine: 'w3', ok: true }] });
    expect(w1.requests('index/add')).toHaveLength(before);
    const refused = await rpc(broadcast.url, 'index/add', { documents: [{ text: 'z' }], _meta: { 'x-rcpgw': { engine: 'reader' } } });
    expect(errorOf(refused)).toMatchObject({ code: -32005, data: { option: '_meta.x-rcpgw.engine' } });
  });

  it('checks options on every target before writing anywhere', async () => {
    const counts = [w1, w2, w3].map((e) => e.requests('index/add').length);
    const res = await rpc(broadcast.url, 'index/add', { documents: [{ text: 'long document' }], chunk: true });
    expect(errorOf(res)).toMatchObject({ code: -32005, data: { option: 'chunk' } });
    expect([w1, w2, w3].map((e) => e.requests('index/add').length)).toEqual(counts);
  });
});

describe('write retries (§7.10)', () => {
  it('repeats a write on the same engine only when every document carries an id', async () => {
    writeControl(w1.control, { fault: 'fail', faultAll: true, failCode: -32010 });
    const target = { headers: { 'x-rcpgw-engine': 'w1' } };
    const count = (): number => w1.requests('index/add').length;
    let before = count();
    expect(
      errorOf(
        await rpc(
          broadcast.url,
          'index/add',
          {
            documents: [
              { id: 'r-1', text: 'a' },
              { id: 'r-2', text: 'b' },
            ],
          },
          target,
        ),
      ).code,
    ).toBe(-32010);
    expect(count() - before).toBe(2); // idempotent upserts: retried once
    before = count();
    expect(
      errorOf(
        await rpc(
          broadcast.url,
          'index/add',
          { documents: [{ id: 'r-3', text: 'a' }, { text: 'no id: a retry would duplicate it' }] },
          target,
        ),
      ).code,
    ).toBe(-32010);
    expect(count() - before).toBe(1); // not idempotent: never repeated
    const deletes = w1.requests('index/delete').length;
    expect(errorOf(await rpc(broadcast.url, 'index/delete', { ids: ['r-1'] }, target)).code).toBe(-32010);
    expect(w1.requests('index/delete').length - deletes).toBe(2); // deletes are idempotent (§7.11)
    writeControl(w1.control, { fault: 'ok' });
  });
});

describe('configured writers', () => {
  it('writes go to every engine marked writer, never to the others', async () => {
    const counts = [w1, reader].map((e) => e.requests('index/add').length);
    const res = await rpc<{ ids: string[] }>(marked.url, 'index/add', { documents: [{ id: 'm-1', text: 'cone flow' }] });
    expect(res.result!.ids).toEqual(['m-1']);
    expect(metaOf(res)).toMatchObject({
      engine: 'w2',
      routedBy: 'writer',
      writes: [
        { engine: 'w2', ok: true },
        { engine: 'w3', ok: true },
      ],
    });
    expect([w1, reader].map((e) => e.requests('index/add').length)).toEqual(counts);
  });
});

schemaCrossCheck();
