/**
 * Fusion strategy and dedup policy selection through the gateway: route config, the vendor
 * `_meta["x-rcpgw"]` key per request, convex only when every engine advertises scoreFloor
 * (else RRF with a `usage.notes` entry), per-request weights, and validation of the key.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GatewayHandle } from '../support/processes.js';
import { emittedErrors, schemaCrossCheck, schemaCrossCheckBanner } from '../support/spec-validator.js';
import { errorOf, Fleet, rpc, type TestEngine } from './fixtures.js';

interface Hit {
  id: string;
  text: string;
  meta: { engine: string; engines?: unknown[] };
}
interface Result {
  hits: Hit[];
  usage?: { notes?: string[] };
  _meta: { fusion: string; engines: string[] };
}

const fleet = new Fleet();
let gw: GatewayHandle;
const QUERY = 'retrieval ranking fusion vector';

beforeAll(async () => {
  // Same corpus under different ids: collapsing them is the dedup policy's job.
  const [f1, f2, raw]: TestEngine[] = await Promise.all([
    fleet.engine('f1', { retrieve: { maxK: 50, modes: ['sparse'], scoreFloor: 0 } }, ['--id-prefix', 'one-']),
    fleet.engine('f2', { retrieve: { maxK: 50, modes: ['sparse'], scoreFloor: 0 } }, ['--id-prefix', 'two-', '--reverse']),
    fleet.engine('raw', { retrieve: { maxK: 50, modes: ['sparse'] } }, ['--id-prefix', 'raw-']),
  ]);
  gw = await fleet.gateway([{ engine: f1 }, { engine: f2 }, { engine: raw }], { routes: { retrieve: { fusion: 'weighted' } } });
});

afterAll(async () => {
  await fleet.stop();
  console.log(schemaCrossCheckBanner());
  expect(emittedErrors()).toEqual([]);
});

const retrieve = (extra: Record<string, unknown> = {}, k = 6): Promise<{ result?: Result; error?: { code: number; data?: unknown } }> =>
  rpc<Result>(gw.url, 'retrieve', { query: QUERY, k, ...extra });

describe('choosing the fusion strategy', () => {
  it('uses the route config, overridden per request by _meta["x-rcpgw"].fusion', async () => {
    expect((await retrieve()).result!._meta.fusion).toBe('weighted');
    expect((await retrieve({ _meta: { 'x-rcpgw': { fusion: 'rrf' } } })).result!._meta.fusion).toBe('rrf');
  });

  it('applies convex only when every participating engine advertises scoreFloor', async () => {
    const floored = await retrieve({ _meta: { 'x-rcpgw': { fusion: 'convex', engines: ['f1', 'f2'] } } });
    expect(floored.result!._meta).toMatchObject({ fusion: 'convex', engines: ['f1', 'f2'] });
    expect(floored.result!.usage?.notes ?? []).toEqual([]);
    const mixed = await retrieve({ _meta: { 'x-rcpgw': { fusion: 'convex' } } });
    expect(mixed.result!._meta.fusion).toBe('rrf');
    expect(mixed.result!.usage!.notes!.some((n) => /convex needs scoreFloor.*raw.*fell back to rrf/.test(n))).toBe(true);
  });

  it('per-request weights change whose hits lead', async () => {
    const zeroed = await retrieve({ _meta: { 'x-rcpgw': { fusion: 'rrf', weights: { f1: 0, raw: 0 } } } });
    expect(zeroed.result!.hits.every((h) => h.meta.engine === 'f2')).toBe(true);
  });

  it('refuses a malformed vendor key with -32602 naming the field', async () => {
    expect(errorOf(await rpc(gw.url, 'retrieve', { query: QUERY, _meta: { 'x-rcpgw': { fusion: 'borda' } } }))).toMatchObject({
      code: -32602,
      data: { field: '_meta.x-rcpgw.fusion' },
    });
    expect(errorOf(await rpc(gw.url, 'retrieve', { query: QUERY, _meta: { 'x-rcpgw': { engines: ['f1', 'ghost'] } } }))).toMatchObject({
      code: -32602,
      data: { field: '_meta.x-rcpgw.engines' },
    });
  });
});

describe('choosing the dedup policy', () => {
  it('collapses the same text from different engines by content hash, not by id', async () => {
    // A narrow query: both engines return all of its few matches, so every text comes back twice.
    const narrow = { query: 'gateway cache' };
    const byId = await retrieve({ ...narrow, _meta: { 'x-rcpgw': { fusion: 'rrf', engines: ['f1', 'f2'] } } }, 50);
    const texts = byId.result!.hits.map((h) => h.text);
    expect(new Set(texts).size).toBeLessThan(texts.length); // one copy per engine
    expect(texts.length).toBeLessThan(50);
    const byHash = await retrieve({ ...narrow, _meta: { 'x-rcpgw': { fusion: 'rrf', engines: ['f1', 'f2'], dedup: 'content-hash' } } }, 50);
    const hashed = byHash.result!.hits.map((h) => h.text);
    expect(new Set(hashed).size).toBe(hashed.length);
    expect(hashed.length).toBe(new Set(texts).size);
    expect(byHash.result!.hits.some((h) => (h.meta.engines ?? []).length === 2)).toBe(true);
  });
});

schemaCrossCheck();
