/**
 * Federated pagination in-process (§10): a gateway cursor carries a fused result across pages
 * (every hit once, the first window exactly one big fusion), reaches past an engine's maxK
 * through that engine's own cursors, wraps a routed engine's cursor, and is refused when
 * tampered with, replayed on other params, or when an engine of its result set fails.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { fuse } from '../../src/core/federation/fusion/fuse.js';
import { RcpError } from '../../src/core/protocol/errors.js';
import type { JsonObject } from '../../src/core/protocol/jsonrpc.js';
import { defaultHits, FakeEngine } from '../support/fake-engine.js';
import { startInProcess, type InProcessGateway } from '../support/in-process.js';

interface Page {
  hits: Array<{ id: string }>;
  nextCursor?: string;
  _meta: { engines: string[] };
}

// fusionDepth 6: each engine's window is 6 hits (capped by its maxK) whatever the page size.
const SETTINGS = { cursorSecret: 'in-process-paging-secret', fusionDepth: 6, retry: { budgetRatio: 0, minPerWindow: 0 } };

let running: InProcessGateway | undefined;
afterEach(async () => {
  await running?.stop();
  running = undefined;
});

/** `deep` serves 30 hits with maxK 50; `paged` serves 24 but at most 4 per call, through its cursors. */
function engines(): { deep: FakeEngine; paged: FakeEngine } {
  return {
    deep: new FakeEngine('deep', { hits: defaultHits('deep', 30) }),
    paged: new FakeEngine('paged', { capabilities: { retrieve: { maxK: 4 }, pagination: {} }, hits: defaultHits('paged', 24) }),
  };
}

async function pageThrough(gw: InProcessGateway, params: JsonObject): Promise<Page[]> {
  const pages: Page[] = [];
  let cursor: string | undefined;
  do {
    const page = (await gw.call('retrieve', { ...params, ...(cursor ? { cursor } : {}) })) as unknown as Page;
    pages.push(page);
    cursor = page.nextCursor;
  } while (cursor !== undefined && pages.length < 100);
  return pages;
}

async function rejection(promise: Promise<unknown>): Promise<RcpError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(RcpError);
  return err as RcpError;
}

describe('cursor round trip', () => {
  it('serves every hit of every engine exactly once, full pages until the last', async () => {
    const { deep, paged } = engines();
    running = await startInProcess([deep, paged], { gateway: SETTINGS });
    const pages = await pageThrough(running, { query: 'q', k: 5 });
    const served = pages.flatMap((page) => page.hits.map((hit) => hit.id));
    expect(new Set(served).size).toBe(served.length);
    expect(new Set(served)).toEqual(new Set([...defaultHits('deep', 30), ...defaultHits('paged', 24)].map((hit) => hit.id)));
    for (const page of pages.slice(0, -1)) expect(page.hits).toHaveLength(5);
    expect(pages.at(-1)!.nextCursor).toBeUndefined();
    // Depth past `paged`'s maxK came through its own cursors, never a k above its maxK.
    const pagedCalls = paged.callsOf('retrieve').map((call) => call.params);
    expect(pagedCalls.some((params) => typeof params.cursor === 'string')).toBe(true);
    expect(pagedCalls.every((params) => (params.k as number) <= 4)).toBe(true);
  });

  it('the pages of the first window are exactly one fusion of that window', async () => {
    const { deep, paged } = engines();
    running = await startInProcess([deep, paged], { gateway: SETTINGS });
    const pages = await pageThrough(running, { query: 'q', k: 3 });
    // Window per engine: fusionDepth = 6, capped by maxK (4 for `paged`).
    const big = fuse(
      [
        { engine: 'deep', weight: 1, hits: defaultHits('deep', 6) },
        { engine: 'paged', weight: 1, hits: defaultHits('paged', 4) },
      ],
      'rrf',
      { k: Infinity, rrfK: 60, dedup: 'id' },
    ).hits.map((hit) => String(hit.id));
    const served = pages.flatMap((page) => page.hits.map((hit) => hit.id));
    expect(served.slice(0, big.length)).toEqual(big);
  });

  it('wraps a routed engine cursor so the next page returns to that engine', async () => {
    const items = Array.from({ length: 7 }, (_, i) => `item-${i}`);
    const lister = (id: string): FakeEngine =>
      new FakeEngine(id, {
        capabilities: { 'x-list': {} },
        methods: {
          'x-list/items': (params) => {
            const offset = typeof params.cursor === 'string' ? Number(params.cursor) : 0;
            return {
              items: items.slice(offset, offset + 3),
              by: id,
              ...(offset + 3 < items.length ? { nextCursor: String(offset + 3) } : {}),
            };
          },
        },
      });
    const a = lister('a');
    const b = lister('b');
    running = await startInProcess([a, b], { gateway: SETTINGS, engines: { a: { priority: 1 } } });
    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await running.call('x-list/items', cursor ? { cursor } : {});
      expect(page.by).toBe('a');
      seen.push(...(page.items as string[]));
      cursor = page.nextCursor as string | undefined;
      if (cursor !== undefined) expect(cursor).not.toMatch(/^\d+$/); // the engine's own cursor never reaches the client
    } while (cursor !== undefined);
    expect(seen).toEqual(items);
    expect(b.calls).toEqual([]);
  });
});

describe('cursor integrity', () => {
  it('refuses a tampered cursor, or one replayed with other params, with -32602 (field "cursor")', async () => {
    const { deep, paged } = engines();
    running = await startInProcess([deep, paged], { gateway: SETTINGS });
    const first = (await running.call('retrieve', { query: 'q', k: 3 })) as unknown as Page;
    const cursor = first.nextCursor!;
    for (const bad of [`${cursor}x`, cursor.slice(0, -3), 'not-a-cursor']) {
      const err = await rejection(running.call('retrieve', { query: 'q', k: 3, cursor: bad }));
      expect(err.code).toBe(-32602);
      expect(err.data?.field).toBe('cursor');
    }
    expect((await rejection(running.call('retrieve', { query: 'other', k: 3, cursor }))).code).toBe(-32602);
    expect((await rejection(running.call('retrieve', { query: 'q', k: 4, cursor }))).code).toBe(-32602);
    expect(((await running.call('retrieve', { query: 'q', k: 3, cursor })) as unknown as Page).hits).toHaveLength(3);
  });

  it('refuses (-32602, field "cursor") a page asked of engines other than its result set: another selection is not a retryable failure', async () => {
    const { deep, paged } = engines();
    running = await startInProcess([deep, paged], { gateway: SETTINGS });
    const first = (await running.call('retrieve', { query: 'q', k: 3 })) as unknown as Page;
    const params = { query: 'q', k: 3, cursor: first.nextCursor };
    // The header narrows the engines without changing the params the cursor is bound to.
    const err = await rejection(running.call('retrieve', params, { headers: { 'x-rcpgw-engine': 'deep' } }));
    expect(err.code).toBe(-32602);
    expect(err.data?.field).toBe('cursor');
    expect(paged.callsOf('retrieve')).toHaveLength(1); // the first page's call only
    expect(((await running.call('retrieve', params)) as unknown as Page).hits).toHaveLength(3);
  });

  it('pages engines whose ids name Object.prototype members like any others', async () => {
    const odd = [new FakeEngine('__proto__', { hits: defaultHits('p', 8) }), new FakeEngine('constructor', { hits: defaultHits('c', 8) })];
    running = await startInProcess(odd, { gateway: SETTINGS });
    const pages = await pageThrough(running, { query: 'q', k: 5 });
    const served = pages.flatMap((page) => page.hits.map((hit) => hit.id));
    expect(pages[0]!._meta.engines).toEqual(['__proto__', 'constructor']);
    expect(new Set(served)).toEqual(new Set([...defaultHits('p', 8), ...defaultHits('c', 8)].map((hit) => hit.id)));
    expect(served).toHaveLength(16);
  });

  it('fails a later page with -32010 when an engine of its result set fails', async () => {
    const { deep, paged } = engines();
    running = await startInProcess([deep, paged], { gateway: SETTINGS });
    const first = (await running.call('retrieve', { query: 'q', k: 3 })) as unknown as Page;
    expect(first._meta.engines).toEqual(['deep', 'paged']);
    paged.fail(-32603);
    const err = await rejection(running.call('retrieve', { query: 'q', k: 3, cursor: first.nextCursor }));
    expect(err.code).toBe(-32010);
    expect(err.data?.engines).toEqual(['paged']);
  });
});

describe('gateway.pagination off', () => {
  it('advertises no pagination, seals no cursor, refuses a cursor (-32602), and drops a routed engine cursor', async () => {
    const { deep, paged } = engines();
    const lister = new FakeEngine('lister', {
      capabilities: { 'x-list': {} },
      methods: { 'x-list/items': () => ({ items: ['one'], nextCursor: 'engine-cursor' }) },
    });
    const on = await startInProcess([deep, paged], { gateway: SETTINGS });
    const issued = ((await on.call('retrieve', { query: 'q', k: 3 })) as unknown as Page).nextCursor!;
    expect(on.gateway.describe().capabilities).toHaveProperty('pagination');
    await on.stop();

    running = await startInProcess([deep, paged, lister], { gateway: { ...SETTINGS, pagination: false } });
    expect(running.gateway.describe().capabilities).not.toHaveProperty('pagination');
    const first = (await running.call('retrieve', { query: 'q', k: 3 })) as unknown as Page;
    expect(first.hits).toHaveLength(3);
    expect(first).not.toHaveProperty('nextCursor'); // 54 hits exist: only the setting leaves the cursor out
    // Even a cursor this gateway's key would verify is refused: pagination is simply not offered.
    const err = await rejection(running.call('retrieve', { query: 'q', k: 3, cursor: issued }));
    expect(err.code).toBe(-32602);
    expect(err.data).toMatchObject({ field: 'cursor' });
    expect((await rejection(running.call('x-list/items', { cursor: 'x' }))).code).toBe(-32602);
    const routed = await running.call('x-list/items', {});
    expect(routed.items).toEqual(['one']);
    expect(routed).not.toHaveProperty('nextCursor');
  });
});

describe('gateway.pagination on, no retrieve engine', () => {
  it('advertises pagination whenever it issues cursors (§10: a nextCursor only where `pagination` is advertised)', async () => {
    const lister = new FakeEngine('lister', {
      capabilities: { 'x-list': {} },
      methods: { 'x-list/items': () => ({ items: ['one'], nextCursor: 'engine-cursor' }) },
    });
    running = await startInProcess([lister], { gateway: SETTINGS });
    const routed = await running.call('x-list/items', {});
    expect(typeof routed.nextCursor).toBe('string');
    expect(running.gateway.describe().capabilities).toHaveProperty('pagination');
  });
});

describe('gateway.pagination off, any cursor', () => {
  it('refuses an empty or non-string cursor too (-32602), and never forwards one to a routed engine', async () => {
    const seen: JsonObject[] = [];
    const lister = new FakeEngine('lister', {
      capabilities: { 'x-list': {} },
      methods: {
        'x-list/items': (params: JsonObject) => {
          seen.push(params);
          return { items: ['one'] };
        },
      },
    });
    const { deep } = engines();
    running = await startInProcess([deep, lister], { gateway: { ...SETTINGS, pagination: false } });
    for (const [method, params] of [
      ['retrieve', { query: 'q', k: 3, cursor: '' }],
      ['x-list/items', { cursor: '' }],
      ['x-list/items', { cursor: 7 }],
      ['x-list/items', { cursor: { offset: 10 } }],
    ] as const) {
      const err = await rejection(running.call(method, params as JsonObject));
      expect(err.code, JSON.stringify(params)).toBe(-32602);
      expect(err.data).toMatchObject({ field: 'cursor' });
    }
    expect(seen).toEqual([]);
    // null is absent (§4.6): not a cursor.
    expect((await running.call('x-list/items', { cursor: null })).items).toEqual(['one']);
  });
});

describe('a write answer', () => {
  it('never carries an engine cursor (§10: writes are not list results; pagination off or on)', async () => {
    const writer = new FakeEngine('writer', {
      capabilities: { index: { writable: true } },
      methods: { 'index/add': () => ({ added: 1, nextCursor: 'engine-internal-cursor' }) },
    });
    for (const pagination of [false, true]) {
      running = await startInProcess([writer], { gateway: { ...SETTINGS, pagination } });
      const answer = await running.call('index/add', { documents: [{ id: 'd1', text: 'x' }] });
      expect(answer.added).toBe(1);
      expect(answer, `pagination ${pagination}`).not.toHaveProperty('nextCursor');
      await running.stop();
      running = undefined;
    }
  });
});

describe('gateway.pagination across a reload', () => {
  it('keeps its running value (§13.2: a session told `pagination` may page on; one told none gets no cursor)', async () => {
    const { deep, paged } = engines();
    running = await startInProcess([deep, paged], { gateway: SETTINGS });
    const first = (await running.call('retrieve', { query: 'q', k: 3 })) as unknown as Page;
    expect(first.nextCursor).toBeDefined();
    const { config } = running;
    const outcome = await running.gateway.reload({ ...config, gateway: { ...config.gateway, pagination: false } });
    expect(outcome.ignoredSettings).toContain('pagination');
    expect(running.gateway.describe().capabilities).toHaveProperty('pagination');
    const second = (await running.call('retrieve', { query: 'q', k: 3, cursor: first.nextCursor })) as unknown as Page;
    expect(second.hits).toHaveLength(3);
    expect(second.nextCursor).toBeDefined();
  });
});
