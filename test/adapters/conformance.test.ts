/**
 * The adapters as standalone RCP servers (`rcp-gateway adapter <kind> --stdio | --http PORT`),
 * through the same L0 probe the gateway's conformance suite runs (§14.1, §5, §11): every frame
 * they write is validated against the RCP schema.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { rpc } from '../support/http-client.js';
import { GATEWAY_CLI, REPO_ROOT, stopChild, tmpDir, writeConfig } from '../support/processes.js';
import { StdioClient } from '../support/stdio-client.js';
import { schemaCrossCheck, schemaCrossCheckBanner } from '../support/spec-validator.js';
import { postgresBinaries, startPostgres, type PostgresServer } from '../support/postgres.js';
import { spawn } from 'node:child_process';
import { FILTERS, fixtureJsonl } from './fixtures.js';
import { loadPgFixture, pgAdapterConfig } from './pg-fixture.js';
import { probeL0 } from './probe.js';

const bin = postgresBinaries();
let sqliteConfig: string;
let postgresConfig: string | undefined;
let server: PostgresServer | undefined;

beforeAll(async () => {
  const dir = tmpDir('rcp-adapter-conf-');
  writeFileSync(path.join(dir, 'docs.jsonl'), fixtureJsonl());
  const indexer = new StdioClient(
    [process.execPath, GATEWAY_CLI, 'adapter', 'sqlite', '--index', '--db', path.join(dir, 'docs.db'), path.join(dir, 'docs.jsonl')],
    { validate: false },
  );
  expect((await indexer.exited).code).toBe(0);
  // The path is relative: it resolves against the config file's folder.
  sqliteConfig = writeConfig(dir, { kind: 'sqlite', name: 'fixture-sqlite', path: './docs.db', filters: FILTERS }, 'sqlite.json');
  if (!bin) return;
  server = await startPostgres(bin);
  const client = new pg.Client({ connectionString: server.url });
  await client.connect();
  await loadPgFixture((sql, params) => client.query(sql, params));
  await client.end();
  postgresConfig = writeConfig(dir, pgAdapterConfig({ url: '${CONFORMANCE_PG_URL}' }), 'postgres.json');
}, 180_000);

afterAll(async () => {
  await server?.stop();
  console.log(schemaCrossCheckBanner());
});

describe('adapter sqlite --stdio', () => {
  probeL0(
    () => new StdioClient([process.execPath, GATEWAY_CLI, 'adapter', 'sqlite', '--config', sqliteConfig, '--stdio'], { cwd: REPO_ROOT }),
    { maxK: 100 },
  );
});

describe.skipIf(!bin)('adapter postgres --stdio', () => {
  probeL0(
    () =>
      new StdioClient([process.execPath, GATEWAY_CLI, 'adapter', 'postgres', '--config', postgresConfig!, '--stdio'], {
        cwd: REPO_ROOT,
        env: { ...process.env, CONFORMANCE_PG_URL: server!.url },
      }),
    { maxK: 100 },
  );
});

describe('adapter sqlite --http', () => {
  let url: string;
  let stop: () => Promise<unknown>;
  beforeAll(async () => {
    const child = spawn(process.execPath, [GATEWAY_CLI, 'adapter', 'sqlite', '--config', sqliteConfig, '--http', '0'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    stop = () => stopChild(child);
    url = await new Promise<string>((resolve, reject) => {
      let err = '';
      child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
        err += chunk;
        const found = /listening on (http:\/\/\S+)/.exec(err);
        if (found) resolve(found[1]!);
      });
      child.once('exit', (code) => reject(new Error(`adapter exited with ${code}: ${err}`)));
    });
  }, 30_000);
  afterAll(async () => {
    expect(await stop()).toBe(0);
  });

  it('serves retrieve with filters statelessly over HTTP', async () => {
    const res = await rpc<{ hits: Array<{ id: string }> }>(url, 'retrieve', {
      query: 'wing',
      k: 10,
      filter: { field: 'year', op: 'gte', value: 2022 },
    });
    expect(res.status).toBe(200);
    expect(res.result!.hits.map((hit) => hit.id).sort()).toEqual(['d4', 'd6']);
    const refused = await rpc(url, 'retrieve', { query: 'wing', filter: { field: 'secret', op: 'exists', value: true } });
    expect(refused.error).toMatchObject({ code: -32602, data: { field: 'filter.secret' } });
    const info = await rpc<{ server: { name: string } }>(url, 'info', {});
    expect(info.result!.server.name).toBe('fixture-sqlite');
  });
});

schemaCrossCheck();
