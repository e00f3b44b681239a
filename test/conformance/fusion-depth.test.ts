/**
 * Prefix-stable fusion, against real engine processes and the default `gateway.fusionDepth`
 * (20): every engine is asked for the depth whatever `k` is, so the answer for k₁ < k₂ ≤ 20 is a
 * prefix of the k₂ answer, and pages of any size concatenate to the one fused list of the
 * engines' top-20 lists, scores descending, before any deeper hit.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fuse } from '../../src/core/federation/fusion/fuse.js';
import { emittedErrors, schemaCrossCheckBanner } from '../support/spec-validator.js';
import type { GatewayHandle } from '../support/processes.js';
import { Fleet, rpc, withRetrieve, type TestEngine } from '../routing/fixtures.js';

const QUERY = 'retrieval ranking fusion vector sparse graph index query engine';
const DEPTH = 20; // the schema default
const fleet = new Fleet();
let a: TestEngine;
let b: TestEngine;
let gw: GatewayHandle;

interface Hit {
  [key: string]: unknown;
  id: string;
  score: number;
}
interface Page {
  hits: Hit[];
  nextCursor?: string;
}

beforeAll(async () => {
  // Opposite rankings of the same corpus: fusion really mixes the two lists.
  [a, b] = await Promise.all([fleet.engine('a', withRetrieve()), fleet.engine('b', withRetrieve(), ['--reverse'])]);
  gw = await fleet.gateway([{ engine: a }, { engine: b }], { cursorSecret: 'fusion-depth-test-secret' });
});

afterAll(async () => {
  await fleet.stop();
  console.log(schemaCrossCheckBanner());
  expect(emittedErrors()).toEqual([]);
});

const retrieve = async (k: number, cursor?: string): Promise<Page> =>
  (await rpc<Page>(gw.url, 'retrieve', { query: QUERY, k, ...(cursor ? { cursor } : {}) })).result!;

describe('fusion depth', () => {
  it('k₁ < k₂ ≤ fusionDepth: the k₁ answer is a prefix of the k₂ answer; each engine is asked for the depth', async () => {
    const askedBefore = a.requests('retrieve').length;
    const full = await retrieve(DEPTH);
    expect(full.hits).toHaveLength(DEPTH);
    for (const k of [1, 2, 3, 5, 8, 13, 19]) expect((await retrieve(k)).hits).toEqual(full.hits.slice(0, k));
    const asked = [...a.requests('retrieve'), ...b.requests('retrieve')].slice(askedBefore).map((e) => e.params!.k);
    expect(new Set(asked)).toEqual(new Set([DEPTH])); // upstream cost: engines × depth hits per request
  });

  it('pages of any size concatenate to the one fused list of the top-depth lists, scores descending', async () => {
    const [listA, listB] = await Promise.all(
      [a, b].map(async (engine) => (await rpc<Page>(engine.url, 'retrieve', { query: QUERY, k: DEPTH }, { validate: false })).result!.hits),
    );
    const fused = fuse(
      [
        { engine: 'a', weight: 1, hits: listA! },
        { engine: 'b', weight: 1, hits: listB! },
      ],
      'rrf',
      { k: Infinity, rrfK: 60, dedup: 'id' },
    ).hits;
    expect(fused.length).toBeGreaterThan(DEPTH);
    for (const pageSize of [3, 7]) {
      const served: Hit[] = [];
      let cursor: string | undefined;
      do {
        const page = await retrieve(pageSize, cursor);
        served.push(...page.hits);
        cursor = page.nextCursor;
      } while (cursor !== undefined && served.length < fused.length);
      const head = served.slice(0, fused.length);
      expect(head.map((hit) => hit.id)).toEqual(fused.map((hit) => String(hit.id)));
      for (let i = 1; i < head.length; i++) expect(head[i]!.score).toBeLessThanOrEqual(head[i - 1]!.score);
      expect(new Set(served.map((hit) => hit.id)).size).toBe(served.length);
    }
  });
});
