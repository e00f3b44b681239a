/**
 * The PostgreSQL full-text adapter against a real server (a throwaway cluster from Debian's
 * postgresql package) and against PGlite (embedded WASM PostgreSQL) — the same adapter code.
 * Skips visibly when the PostgreSQL binaries are not installed (`.ci/run` installs them).
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { PGlite } from '@electric-sql/pglite';
import { openAdapter, parseAdapterConfig } from '../../src/adapters/open.js';
import { GATEWAY_CLI, tmpDir, writeConfig } from '../support/processes.js';
import { postgresBinaries, startPostgres, type PostgresServer } from '../support/postgres.js';
import { adapterContract } from './contract.js';
import { loadPgFixture, pgAdapterConfig } from './pg-fixture.js';

const run = promisify(execFile);
const bin = postgresBinaries();
if (!bin) console.warn('PostgreSQL binaries not found under /usr/lib/postgresql: the real-server adapter tests are skipped');

let server: PostgresServer | undefined;
beforeAll(async () => {
  if (!bin) return;
  server = await startPostgres(bin);
  const client = new pg.Client({ connectionString: server.url });
  await client.connect();
  try {
    await loadPgFixture((sql, params) => client.query(sql, params));
    await loadPgFixture((sql, params) => client.query(sql, params), 'unindexed', { ginIndex: false });
  } finally {
    await client.end();
  }
}, 180_000);
afterAll(async () => {
  await server?.stop();
});

adapterContract('postgres (server)', async () => openAdapter(parseAdapterConfig(pgAdapterConfig({ url: server!.url })), '/'), {
  skip: !bin,
});

describe.skipIf(!bin)('postgres (server): index use, configuration, errors', () => {
  it('says which GIN index serves the search, and when none does, how to create one', async () => {
    const indexed = await openAdapter(parseAdapterConfig(pgAdapterConfig({ url: server!.url })), '/');
    const bare = await openAdapter(parseAdapterConfig(pgAdapterConfig({ url: server!.url }, 'unindexed')), '/');
    try {
      expect(indexed.notes).toEqual([{ level: 'info', message: 'GIN index docs_fts serves the full-text search' }]);
      expect(bare.notes).toHaveLength(1);
      expect(bare.notes[0]!.level).toBe('warning');
      expect(bare.notes[0]!.message).toContain(
        `CREATE INDEX ON "unindexed" USING gin (to_tsvector('english'::regconfig, coalesce("title", '') || ' ' || coalesce("body", '')))`,
      );
      expect(bare.service.describe()._meta).toMatchObject({ notes: [expect.stringMatching(/^warning: no GIN index on unindexed/)] });
    } finally {
      await indexed.close();
      await bare.close();
    }
  });

  it('`adapter postgres --check` reads the connection from ${ENV} and reports the missing index', async () => {
    const dir = tmpDir('rcp-pg-check-');
    const file = writeConfig(dir, pgAdapterConfig({ url: '${TEST_PG_URL}' }, 'unindexed'), 'adapter.json');
    const { stdout } = await run(process.execPath, [GATEWAY_CLI, 'adapter', 'postgres', '--config', file, '--check'], {
      env: { ...process.env, TEST_PG_URL: server!.url },
    });
    expect(stdout).toMatch(/^pg-unindexed: usable; capabilities retrieve, citations, pagination, filter/);
    expect(stdout).toMatch(/warning: no GIN index on unindexed/);
    const { TEST_PG_URL: _unset, ...withoutUrl } = process.env;
    const unset = await run(process.execPath, [GATEWAY_CLI, 'adapter', 'postgres', '--config', file, '--check'], { env: withoutUrl }).catch(
      (err: { code: number; stderr: string }) => err,
    );
    expect(unset).toMatchObject({ code: 2, stderr: expect.stringContaining('environment variable TEST_PG_URL is not set') });
    const down = await run(process.execPath, [GATEWAY_CLI, 'adapter', 'postgres', '--config', file, '--check'], {
      env: { ...process.env, TEST_PG_URL: 'postgres://postgres@127.0.0.1:1/postgres' },
    }).catch((err: { code: number; stdout: string }) => err);
    expect(down).toMatchObject({ code: 1, stdout: expect.stringContaining('NOT usable') });
  });

  it('check-config probes an in-process adapter engine and reports the missing GIN index; a bad adapter entry is invalid config', async () => {
    const dir = tmpDir('rcp-pg-gw-check-');
    const file = writeConfig(dir, {
      engines: [
        { id: 'indexed', transport: 'adapter', adapter: pgAdapterConfig({ url: '${TEST_PG_URL}' }) },
        { id: 'bare', transport: 'adapter', adapter: pgAdapterConfig({ url: '${TEST_PG_URL}' }, 'unindexed') },
      ],
    });
    const { stdout } = await run(process.execPath, [GATEWAY_CLI, 'check-config', '--config', file], {
      env: { ...process.env, TEST_PG_URL: server!.url },
    });
    expect(stdout).toMatch(/indexed\s+adapter\s+postgres docs\s+yes/);
    expect(stdout).toContain('indexed: info: GIN index docs_fts serves the full-text search');
    expect(stdout).toMatch(/bare: warning: no GIN index on unindexed .* CREATE INDEX ON "unindexed" USING gin/);
    const invalid = writeConfig(
      dir,
      { engines: [{ id: 'x', transport: 'adapter', adapter: { kind: 'postgres', table: 'docs; drop', connection: { url: 'x' } } }] },
      'invalid.json',
    );
    const failed = await run(process.execPath, [GATEWAY_CLI, 'check-config', '--config', invalid, '--no-probe']).catch(
      (err: { code: number; stderr: string }) => err,
    );
    expect(failed).toMatchObject({ code: 2 });
    expect((failed as { stderr: string }).stderr).toMatch(/engines\[0\]\.adapter\.table: expected a table name/);
    expect((failed as { stderr: string }).stderr).toMatch(/engines\[0\]\.adapter\.columns/);
  });

  it('refuses to open a table or column that does not exist, and maps an unreachable server to -32010', async () => {
    await expect(openAdapter(parseAdapterConfig({ ...pgAdapterConfig({ url: server!.url }), table: 'nope' }), '/')).rejects.toMatchObject({
      code: -32603,
    });
    await expect(
      openAdapter(parseAdapterConfig({ ...pgAdapterConfig({ url: server!.url }), filters: { colour: 'keyword' } }), '/'),
    ).rejects.toMatchObject({ code: -32603 });
    await expect(
      openAdapter(parseAdapterConfig(pgAdapterConfig({ host: '127.0.0.1', port: 1, user: 'postgres' })), '/'),
    ).rejects.toMatchObject({ code: -32010 });
  });
});

describe('postgres (PGlite, embedded)', () => {
  let dataDir: string;
  beforeAll(async () => {
    dataDir = path.join(tmpDir('rcp-pglite-'), 'db');
    const db = await PGlite.create(dataDir);
    try {
      await loadPgFixture((sql, params) => db.query(sql, params));
    } finally {
      await db.close();
    }
  }, 180_000);
  adapterContract('postgres (PGlite)', async () => openAdapter(parseAdapterConfig(pgAdapterConfig({ pglite: dataDir })), '/'));
});
