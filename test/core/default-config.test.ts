/**
 * The embedded default (config/default.json): two bundled BM25 engines over Cranfield, started by
 * the gateway itself, and Cranfield in SQLite FTS5 served in process (built into a cache file at
 * first start). Checks the README promise (k hits, descending, ≥ 2 engines) and measures
 * fusion quality over all 225 Cranfield queries, per engine and fused, through the gateway.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import path from 'node:path';
import { evaluateRun, loadCranfieldEval } from '../../src/demo/eval/cranfield.js';
import { rpc } from '../support/http-client.js';
import { REPO_ROOT, startGateway, type GatewayHandle } from '../support/processes.js';
import { catalog, waitUntil } from '../resilience/helpers.js';
import { emittedErrors, schemaCrossCheck, schemaCrossCheckBanner } from '../support/spec-validator.js';

interface Hit {
  id: string;
  score: number;
  meta: { engine: string };
}

let gateway: GatewayHandle;
beforeAll(async () => {
  gateway = await startGateway({ configFile: path.join(REPO_ROOT, 'config/default.json') });
  // Figures per engine need every engine up (the SQLite file may be built on this first start).
  await waitUntil(
    'every engine ready',
    async () => [...(await catalog(gateway.url)).values()].every((engine) => engine._meta.status === 'ready'),
    150_000,
  );
}, 180_000);
afterAll(async () => {
  await gateway?.stop();
  console.log(schemaCrossCheckBanner());
  expect(emittedErrors()).toEqual([]);
});

describe('embedded default', () => {
  it('answers a retrieve with k hits, descending scores, from both engines', async () => {
    const res = await rpc<{ hits: Hit[] }>(gateway.url, 'retrieve', { query: 'boundary layer transition on a flat plate', k: 10 });
    const hits = res.result!.hits;
    expect(hits).toHaveLength(10);
    for (let i = 1; i < hits.length; i++) expect(hits[i - 1]!.score).toBeGreaterThanOrEqual(hits[i]!.score);
    expect(new Set(hits.map((h) => h.meta.engine)).size).toBeGreaterThanOrEqual(2);
  });

  it('fuses at least as well as the weaker engine on all 225 Cranfield queries (nDCG@10)', async () => {
    const { queries } = loadCranfieldEval();
    expect(queries).toHaveLength(225);
    const runs: Record<string, Map<string, string[]>> = { titles: new Map(), abstracts: new Map(), fts5: new Map(), fused: new Map() };
    const restrict: Record<string, string[] | undefined> = {
      titles: ['titles'],
      abstracts: ['abstracts'],
      fts5: ['fts5'],
      fused: undefined,
    };
    for (const [name, engines] of Object.entries(restrict)) {
      // Modest concurrency: the engines are real processes on a 2-core machine.
      for (let i = 0; i < queries.length; i += 8) {
        await Promise.all(
          queries.slice(i, i + 8).map(async (query) => {
            const params = { query: query.text, k: 100, ...(engines ? { _meta: { 'x-rcpgw': { engines } } } : {}) };
            const res = await rpc<{ hits: Hit[] }>(gateway.url, 'retrieve', params, { validate: i === 0 });
            runs[name]!.set(
              query.id,
              res.result!.hits.map((h) => String(h.id)),
            );
          }),
        );
      }
    }
    const figures = Object.fromEntries(Object.entries(runs).map(([name, run]) => [name, evaluateRun(run)]));
    const line = (name: string): string => {
      const f = figures[name]!;
      return `${name.padEnd(10)} nDCG@10 ${f.ndcg10.toFixed(4)}  Recall@100 ${f.recall100.toFixed(4)}  MRR ${f.mrr.toFixed(4)}  (${f.queries} queries)`;
    };
    console.log(['Cranfield through the gateway:', line('titles'), line('abstracts'), line('fts5'), line('fused')].join('\n  '));
    const weaker = Math.min(figures.titles!.ndcg10, figures.abstracts!.ndcg10);
    expect(figures.fused!.queries).toBe(225);
    expect(figures.fused!.ndcg10).toBeGreaterThanOrEqual(weaker);
    expect(figures.fts5!.queries).toBe(225);
    expect(figures.fused!.ndcg10).toBeGreaterThanOrEqual(Math.min(weaker, figures.fts5!.ndcg10));
  }, 120_000);
});

schemaCrossCheck();
