/**
 * The SQLite FTS5 adapter on a real database file built by `rcp-gateway adapter sqlite --index`
 * from JSON lines: the shared adapter contract, the index command's output, and a filter set
 * that advertises fewer operators (an unadvertised operator is -32005).
 */
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import { openAdapter, parseAdapterConfig } from '../../src/adapters/open.js';
import { GATEWAY_CLI, tmpDir } from '../support/processes.js';
import { adapterContract, retrieveError } from './contract.js';
import { FILTERS, fixtureJsonl } from './fixtures.js';

const run = promisify(execFile);

/** Builds the fixture database with the CLI; returns its path and the config the CLI printed. */
export async function buildFixtureDb(): Promise<{ db: string; printed: Record<string, unknown> }> {
  const dir = tmpDir('rcp-sqlite-');
  const jsonl = path.join(dir, 'docs.jsonl');
  writeFileSync(jsonl, fixtureJsonl());
  const db = path.join(dir, 'docs.db');
  const { stdout, stderr } = await run(process.execPath, [GATEWAY_CLI, 'adapter', 'sqlite', '--index', '--db', db, dir]);
  expect(stderr).toContain('indexed 6 document(s)');
  return { db, printed: JSON.parse(stdout) as Record<string, unknown> };
}

let fixture: { db: string; printed: Record<string, unknown> };
beforeAll(async () => {
  fixture = await buildFixtureDb();
}, 60_000);

describe('adapter sqlite --index', () => {
  it('prints a config declaring the metadata fields with the types it saw', () => {
    expect(fixture.printed).toEqual({
      kind: 'sqlite',
      path: fixture.db,
      filters: {
        lang: 'keyword',
        year: 'int',
        rating: 'float',
        open: 'bool',
        published: 'date',
        tags: { type: 'keyword', array: true },
        summary: 'keyword',
      },
    });
  });

  it('refuses a malformed line naming its file and line', async () => {
    const dir = tmpDir('rcp-sqlite-bad-');
    writeFileSync(path.join(dir, 'bad.jsonl'), '{"id":"a","text":"ok"}\n{"id":"b"}\n');
    const failed = await run(process.execPath, [
      GATEWAY_CLI,
      'adapter',
      'sqlite',
      '--index',
      '--db',
      path.join(dir, 'x.db'),
      path.join(dir, 'bad.jsonl'),
    ]).catch((err: { code: number; stderr: string }) => err);
    expect(failed).toMatchObject({ code: 1 });
    expect((failed as { stderr: string }).stderr).toMatch(/bad\.jsonl:2: "text" must be a string/);
  });
});

adapterContract('sqlite', async () => openAdapter(parseAdapterConfig({ kind: 'sqlite', path: fixture.db, filters: FILTERS }), '/'));

describe('sqlite: operators outside the advertised set', () => {
  it('advertises only what its fields allow and answers an unadvertised operator with -32005', async () => {
    const adapter = await openAdapter(parseAdapterConfig({ kind: 'sqlite', path: fixture.db, filters: { lang: 'keyword' } }), '/');
    try {
      expect(adapter.service.describe().capabilities.filter).toEqual({
        fields: { lang: 'keyword' },
        operators: ['eq', 'ne', 'in', 'nin', 'exists'],
      });
      expect(await retrieveError(adapter, { query: 'wing', filter: { field: 'lang', op: 'gt', value: 'a' } })).toMatchObject({
        code: -32005,
        data: { option: 'filter.op' },
      });
      expect(await retrieveError(adapter, { query: 'wing', filter: { field: 'year', op: 'eq', value: 2020 } })).toMatchObject({
        code: -32602,
        data: { field: 'filter.year' },
      });
    } finally {
      await adapter.close();
    }
  });

  it('fails to open a missing file or a column that does not exist, naming it', async () => {
    await expect(openAdapter(parseAdapterConfig({ kind: 'sqlite', path: '/nonexistent/x.db' }), '/')).rejects.toThrow(/x\.db/);
    await expect(
      openAdapter(parseAdapterConfig({ kind: 'sqlite', path: fixture.db, filters: { colour: 'keyword' } }), '/'),
    ).rejects.toThrow(/colour/);
  });
});

describe('sqlite: a seeded database is built on first open', () => {
  it('builds a missing file from JSON lines relative to the config folder, then reuses it', async () => {
    const dir = tmpDir('rcp-sqlite-seed-');
    writeFileSync(path.join(dir, 'docs.jsonl'), fixtureJsonl());
    const config = parseAdapterConfig({ kind: 'sqlite', path: './cache/seeded.db', seed: ['./docs.jsonl'], filters: FILTERS });
    const first = await openAdapter(config, dir);
    try {
      expect(first.notes[0]!.message).toMatch(/over 6 documents/);
    } finally {
      await first.close();
    }
    writeFileSync(path.join(dir, 'docs.jsonl'), '');
    const second = await openAdapter(config, dir);
    try {
      expect(second.notes[0]!.message).toMatch(/over 6 documents/);
    } finally {
      await second.close();
    }
  });

  it('builds the bundled Cranfield collection', async () => {
    const dir = tmpDir('rcp-sqlite-cran-');
    const adapter = await openAdapter(parseAdapterConfig({ kind: 'sqlite', path: 'cranfield.db', seed: 'cranfield' }), dir);
    try {
      expect(adapter.notes[0]!.message).toMatch(/over 1400 documents/);
    } finally {
      await adapter.close();
    }
  });
});
