/**
 * Adapter engine entries in the gateway config: validated with the adapter schema and named by
 * path, secrets from `${ENV}`, relative files against the config folder, and a reload that
 * changes the adapter's settings replaces the engine (its database is opened anew).
 */
import { describe, expect, it } from 'vitest';
import { ConfigError, parseConfig } from '../../src/node/config/load.js';
import { planReload } from '../../src/core/ops/reload-plan.js';
import { adapterOf } from '../../src/adapters/engine-config.js';

const sqlite = (adapter: Record<string, unknown>) => ({
  id: 'notes',
  transport: 'adapter',
  adapter: { kind: 'sqlite', path: './notes.db', ...adapter },
});

function problems(raw: unknown, env: NodeJS.ProcessEnv = {}): string[] {
  try {
    parseConfig(raw, { baseDir: '/etc/rcp', env });
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  return [];
}

describe('adapter engines in the gateway config', () => {
  it('accepts an adapter entry, fills its defaults, and resolves its files against the config folder', () => {
    const { config } = parseConfig({ engines: [sqlite({})] }, { baseDir: '/etc/rcp', env: {} });
    const engine = config.engines[0]!;
    expect(engine.cwd).toBe('/etc/rcp');
    expect(adapterOf(engine)).toMatchObject({ kind: 'sqlite', path: './notes.db', table: 'docs', match: 'any', maxK: 100 });
  });

  it('names every problem by its path', () => {
    expect(problems({ engines: [{ id: 'a', transport: 'adapter' }] })).toEqual([
      'engines[0].adapter: expected an adapter object with a kind (required for transport "adapter")',
    ]);
    expect(problems({ engines: [{ id: 'a', transport: 'adapter', adapter: { kind: 'oracle' } }] })[0]).toMatch(
      /^engines\[0\]\.adapter\.kind: /,
    );
    expect(problems({ engines: [sqlite({ table: 'docs"; DROP TABLE docs; --' })] })).toEqual([
      'engines[0].adapter.table: expected an SQL identifier (letters, digits, "_"; not starting with a digit; at most 63 characters)',
    ]);
    expect(problems({ engines: [sqlite({ filters: { year: 'timestamp' } })] })[0]).toMatch(/^engines\[0\]\.adapter\.filters\.year: /);
    const pg = {
      id: 'pg',
      transport: 'adapter',
      adapter: {
        kind: 'postgres',
        connection: { url: '${PG_URL}' },
        table: 'docs',
        columns: { id: 'id', text: 'body' },
        search: { language: "english'; --" },
      },
    };
    expect(problems({ engines: [pg] }, {})).toEqual(['engines[0].adapter.connection.url: environment variable PG_URL is not set']);
    expect(problems({ engines: [pg] }, { PG_URL: 'postgres://x' })).toEqual([
      'engines[0].adapter.search.language: expected a text search configuration name such as "english"',
    ]);
  });

  it('replaces an adapter engine on reload when its adapter settings change, keeps it otherwise', () => {
    const load = (adapter: Record<string, unknown>) => parseConfig({ engines: [sqlite(adapter)] }, { baseDir: '/etc/rcp', env: {} }).config;
    const current = load({});
    const engines = current.engines.map((config) => ({ id: config.id, config }));
    expect(planReload(engines, current.gateway, load({})).summary.unchanged).toEqual(['notes']);
    expect(planReload(engines, current.gateway, load({ table: 'other' })).summary.replaced).toEqual(['notes']);
  });
});
