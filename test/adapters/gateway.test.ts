/**
 * The adapters behind the gateway, fused with a bundled RCP engine: a PostgreSQL adapter and an
 * SQLite adapter served in the gateway's own process (`"transport": "adapter"`: no child
 * process; the SQLite file is seeded with Cranfield at first start) next to the demo BM25 titles
 * engine over stdio, all over Cranfield. Fusion gets hits from every engine; the PostgreSQL server going
 * away mid-load costs no request (the other engines answer, the leg is reported -32010), opens
 * the breaker, and the engine recovers once the server is back.
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { evaluateRun, loadCranfieldEval } from '../../src/demo/eval/cranfield.js';
import { rpc } from '../support/http-client.js';
import { REPO_ROOT } from '../support/processes.js';
import { postgresBinaries, startPostgres, type PostgresServer } from '../support/postgres.js';
import { suiteProcesses } from '../support/suite.js';
import { schemaCrossCheck } from '../support/spec-validator.js';
import { breakerState, catalog, waitUntil } from '../resilience/helpers.js';
import { cranfieldPgConfig, figureLine, loadCranfieldIntoPg } from './cranfield-fixture.js';

interface Hit {
  id: string;
  score: number;
  meta: { engine: string };
}
interface Result {
  hits: Hit[];
  usage: { notes?: string[] };
  _meta: { degraded?: Array<{ engine: string; code: number; reason: string }> };
}

const bin = postgresBinaries();
const processes = suiteProcesses();
let server: PostgresServer;
let url: string;
let gatewayPid: number;
const run = promisify(execFile);

function retrieve(query: string, engines?: string[], k = 10): Promise<Result> {
  const params = { query, k, ...(engines ? { _meta: { 'x-rcpgw': { engines } } } : {}) };
  return rpc<Result>(url, 'retrieve', params, { validate: false }).then((res) => {
    expect(res.error).toBeUndefined();
    return res.result!;
  });
}

describe.skipIf(!bin)('adapters behind the gateway', () => {
  beforeAll(async () => {
    server = await startPostgres(bin!);
    processes.defer(() => server.stop());
    const client = new pg.Client({ connectionString: server.url });
    await client.connect();
    await loadCranfieldIntoPg((sql, params) => client.query(sql, params));
    await client.end();
    const gateway = await processes.gateway(
      {
        engines: [
          {
            id: 'titles',
            transport: 'stdio',
            command: [process.execPath, path.join(REPO_ROOT, 'dist/demo/bm25/main.js'), '--view', 'title'],
          },
          {
            id: 'postgres',
            transport: 'adapter',
            adapter: cranfieldPgConfig({ url: '${GW_TEST_PG_URL}' }, { ranking: 'ts_rank', normalization: 1 }),
          },
          {
            id: 'sqlite',
            transport: 'adapter',
            adapter: { kind: 'sqlite', name: 'cranfield-sqlite', source: 'cranfield', path: './cache/cranfield.db', seed: 'cranfield' },
          },
        ],
        gateway: {
          // Generous: the figures must not depend on how loaded the machine is.
          deadlineMs: 30_000,
          engineTimeoutMs: 25_000,
          breaker: {
            volumeThreshold: 3,
            errorThresholdPercentage: 25,
            rollingWindowMs: 5_000,
            resetTimeoutMs: 300,
            maxResetTimeoutMs: 1_000,
          },
          retry: { budgetRatio: 0, minPerWindow: 0, windowMs: 10_000 },
        },
      },
      { env: { ...process.env, GW_TEST_PG_URL: server.url } },
    );
    url = gateway.url;
    gatewayPid = gateway.proc.pid!;
    // The gateway listens before its engines are started; wait until all three answer.
    await waitUntil(
      'every engine ready',
      async () => [...(await catalog(url)).values()].every((engine) => engine._meta.status === 'ready'),
      120_000,
    ).catch(async (err: unknown) => {
      console.log(JSON.stringify([...(await catalog(url)).values()]), gateway.stderr().slice(-3_000));
      throw err;
    });
  }, 240_000);

  it('serves the adapters in its own process: its only child is the stdio demo engine', async () => {
    const { stdout } = await run('ps', ['-o', 'args=', '--ppid', String(gatewayPid)]);
    const children = stdout.trim().split('\n');
    expect(children).toHaveLength(1);
    expect(children[0]).toContain('dist/demo/bm25/main.js');
  });

  it('fuses the adapters with the demo engine: hits from all three, scores descending', async () => {
    const result = await retrieve('boundary layer transition on a flat plate', undefined, 20);
    expect(result.hits).toHaveLength(20);
    for (let i = 1; i < result.hits.length; i++) expect(result.hits[i - 1]!.score).toBeGreaterThanOrEqual(result.hits[i]!.score);
    expect(new Set(result.hits.map((hit) => hit.meta.engine))).toEqual(new Set(['titles', 'postgres', 'sqlite']));
  });

  it('loses no request when PostgreSQL goes away mid-load; the breaker opens, and the engine recovers', async () => {
    const answers: Result[] = [];
    for (let i = 0; i < 6; i++) answers.push(await retrieve('shock wave interaction', ['titles', 'postgres']));
    expect(answers.every((a) => a.hits.some((hit) => hit.meta.engine === 'postgres'))).toBe(true);
    await server.stop('immediate');
    for (let i = 0; i < 8; i++) answers.push(await retrieve('shock wave interaction', ['titles', 'postgres']));
    const during = answers.slice(6);
    expect(during.every((a) => a.hits.length === 10 && a.hits.every((hit) => hit.meta.engine === 'titles'))).toBe(true);
    const reasons = during.flatMap((a) => (a._meta.degraded ?? []).filter((d) => d.engine === 'postgres'));
    expect(reasons.length).toBe(during.length);
    expect(reasons[0]).toMatchObject({ code: -32010 });
    expect(reasons.some((d) => d.reason === 'circuit-open')).toBe(true);
    expect(await breakerState(url, 'postgres')).not.toBe('closed');

    await server.start();
    // Half-open trials reach the adapter again; its pool reconnects on the next search.
    const recovered = await waitUntil(
      'postgres hits after the restart',
      async () => {
        const result = await retrieve('shock wave interaction', ['titles', 'postgres']);
        return result.hits.some((hit) => hit.meta.engine === 'postgres') ? result : undefined;
      },
      30_000,
    );
    expect(recovered.hits.length).toBe(10);
    expect(await breakerState(url, 'postgres')).toBe('closed');
  }, 120_000);

  it('reports nDCG@10 of each engine and of the fusion through the gateway', async () => {
    const { queries } = loadCranfieldEval();
    const figures: Array<[string, ReturnType<typeof evaluateRun>]> = [];
    for (const [name, engines] of [
      ['titles', ['titles']],
      ['postgres', ['postgres']],
      ['sqlite', ['sqlite']],
      ['fused (3 engines)', undefined],
    ] as const) {
      const run = new Map<string, string[]>();
      for (let i = 0; i < queries.length; i += 4) {
        await Promise.all(
          queries.slice(i, i + 4).map(async (query) => {
            run.set(
              query.id,
              (await retrieve(query.text, engines ? [...engines] : undefined, 100)).hits.map((hit) => String(hit.id)),
            );
          }),
        );
      }
      figures.push([name, evaluateRun(run)]);
    }
    console.log(['Cranfield through the gateway (k = 100):', ...figures.map(([name, f]) => figureLine(name, f))].join('\n  '));
    const byName = new Map(figures);
    const weakest = Math.min(...['titles', 'postgres', 'sqlite'].map((name) => byName.get(name)!.ndcg10));
    expect(byName.get('fused (3 engines)')!.queries).toBe(225);
    expect(byName.get('fused (3 engines)')!.ndcg10).toBeGreaterThan(weakest);
  }, 300_000);
});

schemaCrossCheck();
