/**
 * §16.2 on every forwarded call, against a real engine process: fused (`retrieve`, `graph
 * local`), routed (`graph global`, `embed`) and written (`index/add`) requests all carry the hop
 * budget decremented and the path with the gateway appended, none is forwarded at depth 0, and
 * none goes to an engine already on the path.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { emittedErrors, schemaCrossCheckBanner } from '../support/spec-validator.js';
import type { GatewayHandle } from '../support/processes.js';
import { errorOf, Fleet, rpc, type TestEngine } from '../routing/fixtures.js';

const fleet = new Fleet();
let engine: TestEngine;
let gw: GatewayHandle;

const CALLS: Array<[string, Record<string, unknown>]> = [
  ['retrieve', { query: 'graph index', k: 2 }],
  ['graph', { op: 'local', query: 'graph index', k: 2 }],
  ['graph', { op: 'global', query: 'graph index' }],
  ['embed', { inputs: ['graph'] }],
  ['index/add', { documents: [{ id: 'hop-doc', text: 'graph index' }] }],
];

beforeAll(async () => {
  engine = await fleet.engine('e', {
    retrieve: { maxK: 50, modes: ['sparse'] },
    graph: { ops: ['local', 'global'] },
    embed: { dimension: 4, identity: 'hash-4' },
    index: { writable: true },
  });
  gw = await fleet.gateway([{ engine }], { name: 'gw' });
});

afterAll(async () => {
  await fleet.stop();
  console.log(schemaCrossCheckBanner());
  expect(emittedErrors()).toEqual([]);
});

const forwarded = (method: string): number => engine.requests(method).length;

describe('§16.2 hop budget and path on every forwarded method', () => {
  it.each(CALLS)('%s %j at depth 0: refused (-32010, not retryable), never forwarded', async (method, params) => {
    const before = forwarded(method);
    const reply = await rpc(gw.url, method, { ...params, _meta: { federation: { depth: 0, path: ['up'] } } });
    expect(errorOf(reply)).toMatchObject({ code: -32010, data: { retryable: false } });
    expect(forwarded(method)).toBe(before);
  });

  it.each(CALLS)('%s %j at depth 2: forwarded with depth 1 and the gateway on the path', async (method, params) => {
    const reply = await rpc(gw.url, method, { ...params, _meta: { federation: { depth: 2, path: ['up'] } } });
    expect(reply.error).toBeUndefined();
    const meta = engine.requests(method).at(-1)!.params!._meta as Record<string, unknown>;
    expect(meta.federation).toEqual({ depth: 1, path: ['up', 'gw'] });
  });

  it.each(CALLS)('%s %j with the engine already on the path: not forwarded (cycle)', async (method, params) => {
    const before = forwarded(method);
    const reply = await rpc(gw.url, method, { ...params, _meta: { federation: { depth: 2, path: ['e'] } } });
    expect(forwarded(method)).toBe(before);
    if (reply.error) expect(reply.error.code).toBe(-32010);
    else expect(JSON.stringify(reply.result)).toMatch(/cycle|federation path/);
  });
});
