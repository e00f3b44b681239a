/**
 * Federated pagination through the gateway (§10): opaque signed cursors, no repeats and no gaps
 * across pages, the first window equal to one big fusion, engines' own cursors used to read
 * deeper, tampered / foreign / expired cursors refused, and a later page refused when an engine
 * of its result set is gone.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { canonicalRequest, cursorKey, legacyRequestFingerprint, sealCursor, type FusedPosition } from '../../src/core/federation/cursor.js';
import { openFusedCursor, sealFusedCursor } from '../../src/core/federation/fused-cursor.js';
import { fusedCursorPosition } from '../support/fused-cursor.js';
import { fuse } from '../../src/core/federation/fusion/fuse.js';
import type { EngineHit } from '../../src/core/federation/fusion/types.js';
import type { GatewayHandle } from '../support/processes.js';
import { emittedErrors, schemaCrossCheck, schemaCrossCheckBanner } from '../support/spec-validator.js';
import { errorOf, Fleet, rpc, type TestEngine } from './fixtures.js';

const SECRET = 'pagination-test-secret-0123456789';
const QUERY = 'graph index query retrieval';
const fleet = new Fleet();
let deep: TestEngine;
let paged: TestEngine;
let gw: GatewayHandle;

interface Page {
  hits: EngineHit[];
  nextCursor?: string;
  _meta: { engines: string[] };
}

beforeAll(async () => {
  [deep, paged] = await Promise.all([
    fleet.engine('deep', { retrieve: { maxK: 50, modes: ['sparse'], scoreFloor: 0 }, graph: { ops: ['local'] } }),
    // A small maxK: the gateway has to follow this engine's own cursors to read deeper.
    fleet.engine('paged', { retrieve: { maxK: 4, modes: ['sparse'], scoreFloor: 0 }, pagination: {}, graph: { ops: ['local'] } }, [
      '--reverse',
    ]),
  ]);
  // fusionDepth 6: each engine's window is 6 hits (capped by its maxK) whatever the page size.
  gw = await fleet.gateway([{ engine: deep }, { engine: paged }], { cursorSecret: SECRET, fusionDepth: 6 });
});

afterAll(async () => {
  await fleet.stop();
  console.log(schemaCrossCheckBanner());
  expect(emittedErrors()).toEqual([]);
});

async function pageThrough(method: string, params: Record<string, unknown>): Promise<Page[]> {
  const pages: Page[] = [];
  let cursor: string | undefined;
  do {
    const res = await rpc<Page>(gw.url, method, { ...params, ...(cursor ? { cursor } : {}) });
    if (res.error) throw new Error(`page ${pages.length + 1}: ${JSON.stringify(res.error)}`);
    pages.push(res.result!);
    cursor = res.result!.nextCursor;
  } while (cursor !== undefined && pages.length < 200);
  return pages;
}

/** Everything an engine matches, read directly from it (following its cursors). */
async function everything(engine: TestEngine, k: number): Promise<EngineHit[]> {
  const hits: EngineHit[] = [];
  let cursor: string | undefined;
  do {
    const res = await rpc<Page>(engine.url, 'retrieve', { query: QUERY, k, ...(cursor ? { cursor } : {}) }, { validate: false });
    hits.push(...res.result!.hits);
    cursor = res.result!.nextCursor;
  } while (cursor !== undefined);
  return hits;
}

describe('paging a fused result', () => {
  it('serves every hit exactly once across pages, following engine cursors for depth', async () => {
    const pages = await pageThrough('retrieve', { query: QUERY, k: 3 });
    const served = pages.flatMap((p) => p.hits.map((h) => String(h.id)));
    expect(new Set(served).size).toBe(served.length);
    const all = new Set([...(await everything(deep, 50)), ...(await everything(paged, 4))].map((h) => String(h.id)));
    expect(all.size).toBeGreaterThan(12);
    expect(new Set(served)).toEqual(all);
    for (const page of pages.slice(0, -1)) expect(page.hits).toHaveLength(3);
    // The gateway read past `paged`'s maxK through its own cursors.
    expect(paged.requests('retrieve').some((e) => typeof e.params?.cursor === 'string')).toBe(true);
    expect(pages.at(-1)!.nextCursor).toBeUndefined();
  });

  it('the pages of the first window are exactly one big fusion of that window', async () => {
    const k = 3;
    const pages = await pageThrough('retrieve', { query: QUERY, k });
    // Window per engine: fusionDepth (6), capped by the engine's maxK.
    const [d, p] = await Promise.all([
      rpc<Page>(deep.url, 'retrieve', { query: QUERY, k: 6 }, { validate: false }),
      rpc<Page>(paged.url, 'retrieve', { query: QUERY, k: 4 }, { validate: false }),
    ]);
    const big = fuse(
      [
        { engine: 'deep', weight: 1, hits: d.result!.hits, scoreFloor: 0 },
        { engine: 'paged', weight: 1, hits: p.result!.hits, scoreFloor: 0 },
      ],
      'rrf',
      { k: Infinity, rrfK: 60, dedup: 'id' },
    ).hits.map((h) => String(h.id));
    const served = pages.flatMap((page) => page.hits.map((h) => String(h.id)));
    expect(big.length).toBeGreaterThan(2 * k);
    expect(served.slice(0, big.length)).toEqual(big);
  });

  it('pages a fused graph op the same way', async () => {
    const pages = await pageThrough('graph', { op: 'local', query: QUERY, k: 4 });
    const served = pages.flatMap((p) => p.hits.map((h) => String(h.id)));
    expect(pages.length).toBeGreaterThan(2);
    expect(new Set(served).size).toBe(served.length);
  });

  it('gives no cursor when the first page holds everything', async () => {
    const res = await rpc<Page>(gw.url, 'retrieve', { query: 'gateway', k: 50 });
    expect(res.result!.hits.length).toBeGreaterThan(0);
    expect(res.result!.nextCursor).toBeUndefined();
  });
});

describe('cursor integrity', () => {
  it('refuses a tampered, truncated or foreign cursor with -32602 (data.field "cursor")', async () => {
    const first = await rpc<Page>(gw.url, 'retrieve', { query: QUERY, k: 3 });
    const cursor = first.result!.nextCursor!;
    const [body, mac] = cursor.split('.') as [string, string];
    const fields = body.split('~');
    fields[4] = '0'; // the offset: try to re-read the first page under the old signature
    const forged = `${fields.join('~')}.${mac}`;
    for (const bad of [forged, cursor.slice(0, -3), `${cursor}x`, 'not-a-cursor']) {
      const res = await rpc(gw.url, 'retrieve', { query: QUERY, k: 3, cursor: bad });
      expect(errorOf(res)).toMatchObject({ code: -32602, data: { field: 'cursor' } });
    }
    // A genuine cursor replayed with other params, or on another method, is refused too.
    expect(errorOf(await rpc(gw.url, 'retrieve', { query: 'other words', k: 3, cursor }))).toMatchObject({
      code: -32602,
      data: { field: 'cursor' },
    });
    expect(errorOf(await rpc(gw.url, 'retrieve', { query: QUERY, k: 4, cursor })).code).toBe(-32602);
    expect(errorOf(await rpc(gw.url, 'graph', { op: 'local', query: QUERY, k: 3, cursor })).code).toBe(-32602);
    // The genuine cursor still works.
    expect((await rpc<Page>(gw.url, 'retrieve', { query: QUERY, k: 3, cursor })).result!.hits).toHaveLength(3);
  });

  it('refuses an expired cursor with -32015, in either format', async () => {
    const params = { query: QUERY, k: 3 };
    const position: FusedPosition = { kind: 'fused', engines: ['deep', 'paged'], depth: { deep: 6, paged: 4 }, segment: 0, offset: 3 };
    const expiresAt = Date.now() - 1;
    const expiredV1 = sealCursor(
      { method: 'retrieve', fingerprint: legacyRequestFingerprint(params, 'x-rcpgw'), expiresAt, position },
      cursorKey(SECRET),
    );
    const expired = sealFusedCursor({ method: 'retrieve', expiresAt, position }, canonicalRequest(params, 'x-rcpgw'), cursorKey(SECRET));
    for (const token of [expired, expiredV1]) {
      expect(errorOf(await rpc(gw.url, 'retrieve', { ...params, cursor: token }))).toMatchObject({
        code: -32015,
        data: { field: 'cursor' },
      });
    }
  });

  it('still pages with a version 1 cursor issued before the compact format (a rolling upgrade)', async () => {
    const params = { query: QUERY, k: 3 };
    const first = await rpc<Page>(gw.url, 'retrieve', params);
    const compact = first.result!.nextCursor!;
    expect(compact.startsWith('2~')).toBe(true);
    const opened = openFusedCursor(compact, cursorKey(SECRET), { method: 'retrieve', request: canonicalRequest(params, 'x-rcpgw') });
    const v1 = sealCursor({ ...opened, fingerprint: legacyRequestFingerprint(params, 'x-rcpgw') }, cursorKey(SECRET));
    const viaCompact = await rpc<Page>(gw.url, 'retrieve', { ...params, cursor: compact });
    const viaV1 = await rpc<Page>(gw.url, 'retrieve', { ...params, cursor: v1 });
    expect(viaCompact.result!.hits.length).toBe(3);
    expect(viaV1.result!.hits.map((h) => h.id)).toEqual(viaCompact.result!.hits.map((h) => h.id));
    // The next page's cursor is issued in the compact format, whichever the request came with.
    expect(viaV1.result!.nextCursor!.startsWith('2~')).toBe(true);
    expect(fusedCursorPosition(viaV1.result!.nextCursor!)).toBe(fusedCursorPosition(viaCompact.result!.nextCursor!));
  });

  it('fails a later page with -32010 when an engine of its result set is gone', async () => {
    const first = await rpc<Page>(gw.url, 'retrieve', { query: QUERY, k: 3 });
    expect(first.result!._meta.engines).toEqual(['deep', 'paged']);
    await paged.stop();
    const next = await rpc(gw.url, 'retrieve', { query: QUERY, k: 3, cursor: first.result!.nextCursor });
    expect(errorOf(next)).toMatchObject({ code: -32010, data: { engines: ['paged'] } });
    // Restarting pagination works with the engines that are left, and pages consistently.
    const pages = await pageThrough('retrieve', { query: QUERY, k: 5 });
    const served = pages.flatMap((p) => p.hits.map((h) => String(h.id)));
    expect(new Set(served).size).toBe(served.length);
    expect(pages[0]!._meta.engines).toEqual(['deep']);
  });
});

schemaCrossCheck();
