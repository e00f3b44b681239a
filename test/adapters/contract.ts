/**
 * The behaviour every database adapter must show over the fixture (fixtures.ts), registered once
 * per adapter: retrieve, each filter operator, paging, rejected filters, and the injection corpus
 * (hostile strings never select a row, never fail the search, never change the table).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { OpenedAdapter } from '../../src/adapters/open.js';
import type { CallContext } from '../../src/core/service/contract.js';
import { testCallContext } from '../support/call-context.js';
import { RcpError } from '../../src/core/protocol/errors.js';
import { DOCS, FILTER_CASES, HOSTILE_STRINGS, REJECTED_FILTERS } from './fixtures.js';

interface Hit {
  id: string;
  score: number;
  text?: string;
  citation?: { source: string; title?: string; uri?: string };
  meta?: Record<string, unknown>;
}
interface Result {
  hits: Hit[];
  nextCursor?: string;
  usage?: { notes?: string[] };
}

function context(): CallContext {
  return testCallContext({ transport: 'stdio' });
}

export async function retrieve(adapter: OpenedAdapter, params: Record<string, unknown>): Promise<Result> {
  return (await adapter.service.call('retrieve', params, context())) as unknown as Result;
}

export async function retrieveError(adapter: OpenedAdapter, params: Record<string, unknown>): Promise<RcpError> {
  try {
    await retrieve(adapter, params);
  } catch (err) {
    if (err instanceof RcpError) return err;
    throw err;
  }
  throw new Error(`expected retrieve to fail: ${JSON.stringify(params).slice(0, 200)}`);
}

const ALL_IDS = DOCS.map((doc) => doc.id).sort();
const sortedIds = (result: Result): string[] => result.hits.map((hit) => hit.id).sort();

export function adapterContract(label: string, open: () => Promise<OpenedAdapter>, options: { skip?: boolean } = {}): void {
  describe.skipIf(options.skip === true)(`${label}: retrieve, filters, paging, injection`, () => {
    let adapter: OpenedAdapter;
    beforeAll(async () => {
      adapter = await open();
    }, 180_000);
    afterAll(async () => {
      await adapter?.close();
    });

    it('advertises sparse retrieval, citations, pagination and each declared field with its type and operators', () => {
      const caps = adapter.service.describe().capabilities;
      expect(caps.retrieve).toMatchObject({ modes: ['sparse'], scoreFloor: 0 });
      expect(caps).toHaveProperty('citations');
      expect(caps).toHaveProperty('pagination');
      expect(caps.filter).toEqual({
        fields: { lang: 'keyword', year: 'int', rating: 'float', open: 'bool', published: 'date', tags: 'keyword', summary: 'text' },
        operators: ['eq', 'ne', 'gt', 'gte', 'lt', 'lte', 'in', 'nin', 'contains', 'exists'],
      });
    });

    it('ranks the matching documents with text, citation and typed meta, scores descending', async () => {
      const result = await retrieve(adapter, { query: 'delta wing vortex', k: 10 });
      expect(sortedIds(result)).toEqual(ALL_IDS);
      expect(result.hits[0]!.id).toBe('d3');
      for (let i = 1; i < result.hits.length; i++) expect(result.hits[i - 1]!.score).toBeGreaterThanOrEqual(result.hits[i]!.score);
      expect(result.hits.every((hit) => hit.score >= 0)).toBe(true);
      const d3 = result.hits[0]!;
      expect(d3.text).toBe(DOCS[2]!.text);
      expect(d3.citation).toMatchObject({ title: 'Delta wing vortices', uri: 'https://example.org/d3' });
      expect(d3.citation!.source).toMatch(/:d3$/);
      expect(d3.meta).toMatchObject({ lang: 'en', year: 2021, open: true, tags: [] });
    });

    it('honours k, includeText:false and minScore', async () => {
      expect((await retrieve(adapter, { query: 'wing', k: 2 })).hits).toHaveLength(2);
      const bare = await retrieve(adapter, { query: 'wing', k: 6, includeText: false });
      expect(bare.hits.every((hit) => hit.text === undefined && hit.citation !== undefined)).toBe(true);
      const top = (await retrieve(adapter, { query: 'delta vortex', k: 10 })).hits;
      const floor = top[0]!.score;
      const above = await retrieve(adapter, { query: 'delta vortex', k: 10, minScore: floor });
      expect(above.hits.map((hit) => hit.id)).toEqual(top.filter((hit) => hit.score >= floor).map((hit) => hit.id));
    });

    it('answers a query with no searchable word with no hits', async () => {
      expect((await retrieve(adapter, { query: '?!  ;--', k: 5 })).hits).toEqual([]);
      expect((await retrieve(adapter, { query: 'zeppelinxyz', k: 5 })).hits).toEqual([]);
    });

    it('refuses unsupported modes and rerankers (-32005) unless strict:false', async () => {
      expect(await retrieveError(adapter, { query: 'wing', mode: 'dense' })).toMatchObject({ code: -32005, data: { option: 'mode' } });
      expect(await retrieveError(adapter, { query: 'wing', rerank: { method: 'cross-encoder' } })).toMatchObject({ code: -32005 });
      const lenient = await retrieve(adapter, { query: 'wing', mode: 'dense', strict: false, k: 1 });
      expect(lenient.hits).toHaveLength(1);
      expect(lenient.usage?.notes?.[0]).toMatch(/mode "dense"/);
    });

    for (const { name, filter, ids } of FILTER_CASES) {
      it(`filter: ${name}`, async () => {
        expect(sortedIds(await retrieve(adapter, { query: 'wing', k: 20, filter }))).toEqual(ids);
      });
    }

    for (const { name, filter, code, data } of REJECTED_FILTERS) {
      it(`rejects filter: ${name} (${code})`, async () => {
        expect(await retrieveError(adapter, { query: 'wing', filter })).toMatchObject({ code, data });
      });
    }

    it('pages with cursors that cover the ranking exactly once, bound to their query', async () => {
      const whole = (await retrieve(adapter, { query: 'wing lift', k: 6 })).hits.map((hit) => hit.id);
      const paged: string[] = [];
      let cursor: string | undefined;
      let pages = 0;
      do {
        const page = await retrieve(adapter, { query: 'wing lift', k: 4, ...(cursor ? { cursor } : {}) });
        paged.push(...page.hits.map((hit) => hit.id));
        cursor = page.nextCursor;
        pages += 1;
      } while (cursor !== undefined && pages < 10);
      expect(pages).toBe(2);
      expect(paged).toEqual(whole);
      const first = await retrieve(adapter, { query: 'wing lift', k: 2 });
      expect(await retrieveError(adapter, { query: 'wing box', k: 2, cursor: first.nextCursor })).toMatchObject({
        code: -32602,
        data: { field: 'cursor' },
      });
      expect(await retrieveError(adapter, { query: 'wing', cursor: 'not-a-cursor' })).toMatchObject({
        code: -32602,
        data: { field: 'cursor' },
      });
    });

    it('treats every hostile string as data: as a filter value it selects nothing, as a query it searches words', async () => {
      for (const value of HOSTILE_STRINGS) {
        const label = JSON.stringify(value.slice(0, 40));
        const byKeyword = await retrieve(adapter, { query: 'wing', k: 20, filter: { field: 'lang', op: 'eq', value } });
        expect(byKeyword.hits, label).toEqual([]);
        const excluded = await retrieve(adapter, { query: 'wing', k: 20, filter: { field: 'lang', op: 'ne', value } });
        expect(sortedIds(excluded), label).toEqual(ALL_IDS);
        const inList = await retrieve(adapter, { query: 'wing', k: 20, filter: { field: 'tags', op: 'contains', value } });
        expect(inList.hits, label).toEqual([]);
        const asQuery = await retrieve(adapter, { query: value, k: 20 });
        expect(
          asQuery.hits.every((hit) => ALL_IDS.includes(hit.id)),
          label,
        ).toBe(true);
      }
      // The table is intact: every document is still there and still searchable.
      expect(sortedIds(await retrieve(adapter, { query: 'wing', k: 20 }))).toEqual(ALL_IDS);
    }, 60_000);

    it('searches the words of a hostile query, never its syntax', async () => {
      const titled = await retrieve(adapter, { query: 'title:delta NEAR(vortex', k: 1 });
      expect(titled.hits[0]!.id).toBe('d3');
      const quoted = await retrieve(adapter, { query: '"delta" OR 1=1; --', k: 1 });
      expect(quoted.hits[0]!.id).toBe('d3');
    });
  });
}
