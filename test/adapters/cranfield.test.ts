/**
 * Cranfield (1,400 abstracts, 225 judged queries) in each adapter's database, evaluated through
 * the adapter's RCP service next to the bundled BM25 demo engines. The figures are printed; the
 * assertions are floors a little under the measured values (the rankings are deterministic, so
 * falling under one means the ranking changed).
 */
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { openAdapter, parseAdapterConfig } from '../../src/adapters/open.js';
import { ensureCranfieldSqlite } from '../../src/demo/sqlite/cranfield.js';
import { createBm25Engine } from '../../src/demo/bm25/index.js';
import { evaluateRun, loadCranfieldEval, type RunEvaluation } from '../../src/demo/eval/cranfield.js';
import { tmpDir } from '../support/processes.js';
import { postgresBinaries, startPostgres, type PostgresServer } from '../support/postgres.js';
import { cranfieldPgConfig, evaluateAdapter, figureLine, loadCranfieldIntoPg } from './cranfield-fixture.js';

const bin = postgresBinaries();
let server: PostgresServer | undefined;
const figures = new Map<string, RunEvaluation>();

beforeAll(async () => {
  if (!bin) return;
  server = await startPostgres(bin);
  const client = new pg.Client({ connectionString: server.url });
  await client.connect();
  await loadCranfieldIntoPg((sql, params) => client.query(sql, params));
  await client.end();
}, 180_000);

afterAll(async () => {
  await server?.stop();
  console.log(
    ['Cranfield through the adapters (k = 100, all 225 queries):', ...[...figures].map(([name, f]) => figureLine(name, f))].join('\n  '),
  );
});

describe('Cranfield nDCG@10 per engine', () => {
  it('the demo BM25 engines (reference figures)', () => {
    const { queries } = loadCranfieldEval();
    for (const view of ['title', 'body'] as const) {
      const engine = createBm25Engine(view);
      figures.set(
        `demo bm25 ${view === 'title' ? 'titles' : 'abstracts'}`,
        evaluateRun(new Map(queries.map((q) => [q.id, engine.search(q.text, 100).hits.map((hit) => hit.id)]))),
      );
    }
    expect(figures.get('demo bm25 titles')!.ndcg10).toBeCloseTo(0.4274, 3);
    expect(figures.get('demo bm25 abstracts')!.ndcg10).toBeCloseTo(0.4754, 3);
  }, 120_000);

  it('SQLite FTS5, bm25() over title and abstract', async () => {
    const file = path.join(tmpDir('rcp-cran-sqlite-'), 'cranfield.db');
    expect(await ensureCranfieldSqlite(file)).toBe(true);
    expect(await ensureCranfieldSqlite(file)).toBe(false);
    const adapter = await openAdapter(parseAdapterConfig({ kind: 'sqlite', path: file }), '/');
    try {
      figures.set('sqlite fts5 bm25', await evaluateAdapter(adapter));
    } finally {
      await adapter.close();
    }
    expect(figures.get('sqlite fts5 bm25')!.queries).toBe(225);
    expect(figures.get('sqlite fts5 bm25')!.ndcg10).toBeGreaterThan(0.5);
  }, 120_000);

  it.skipIf(!bin)(
    'PostgreSQL, ts_rank_cd (the default) and ts_rank with length normalization',
    async () => {
      for (const [name, search, floor] of [
        ['postgres ts_rank_cd (default)', {}, 0.29],
        ['postgres ts_rank_cd normalization 2', { normalization: 2 }, 0.37],
        ['postgres ts_rank normalization 1', { ranking: 'ts_rank', normalization: 1 }, 0.45],
      ] as const) {
        const adapter = await openAdapter(parseAdapterConfig(cranfieldPgConfig({ url: server!.url }, search)), '/');
        try {
          expect(adapter.notes).toEqual([{ level: 'info', message: 'GIN index cranfield_tsv serves the full-text search' }]);
          figures.set(name, await evaluateAdapter(adapter));
        } finally {
          await adapter.close();
        }
        expect(figures.get(name)!.ndcg10, name).toBeGreaterThan(floor);
      }
    },
    300_000,
  );
});
