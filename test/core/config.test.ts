/**
 * Config loading as a user meets it: precise error messages from the real CLI, a plain §16.1
 * registry accepted as-is, relative stdio commands resolved against the config's folder.
 */
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseConfig, ConfigError, loadConfigFile } from '../../src/node/config/load.js';
import { rpc } from '../support/http-client.js';
import { ENGINE_PATH, GATEWAY_CLI, REPO_ROOT, startGateway, tmpDir, writeConfig, type GatewayHandle } from '../support/processes.js';

function problemsOf(raw: unknown): string[] {
  try {
    parseConfig(raw, { baseDir: '/etc/rcp', env: { HOME_URL: 'http://127.0.0.1:9/rcp' } });
    return [];
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
}

describe('config validation', () => {
  it('names the exact path and problem', () => {
    expect(
      problemsOf({
        engines: [
          { id: 'a', transport: 'http', url: 'http://x/rcp' },
          { id: 'b', transport: 'http', url: 'ftp://nope' },
        ],
      }),
    ).toEqual(['engines[1].url: expected an http(s) URL']);
    expect(problemsOf({ engines: [] })).toEqual(['engines: expected at least one engine']);
    expect(problemsOf({ engines: [{ id: 'a', transport: 'pigeon' }] })).toEqual([
      'engines[0].transport: expected "http", "stdio" or "adapter"',
    ]);
    expect(problemsOf({ engines: [{ id: 'a', transport: 'stdio' }] })).toEqual([
      'engines[0].command: expected a command array (required for transport "stdio")',
    ]);
    expect(problemsOf({ engines: [{ id: 'a', transport: 'http', url: 'http://x/rcp' }], gateway: { port: 'eighty' } })[0]).toMatch(
      /^gateway\.port: /,
    );
    expect(problemsOf({ engines: [{ id: 'a', transport: 'http', url: 'http://x/rcp' }], gateway: { colour: 'blue' } })).toEqual([
      'gateway: unknown key(s) "colour"',
    ]);
    expect(
      problemsOf({
        engines: [
          { id: 'a', transport: 'http', url: 'http://x/rcp' },
          { id: 'a', transport: 'http', url: 'http://y/rcp' },
        ],
      }),
    ).toEqual(['engines[1].id: duplicate engine id "a" (also engines[0])']);
  });

  it('accepts a plain registry as-is, with defaults and env interpolation', () => {
    const loaded = parseConfig(
      {
        $schema: 'https://example/rcp.json',
        engines: [{ id: 'web', transport: 'http', url: '${HOME_URL}', priority: 5, weight: 1.5, required: false }],
      },
      { baseDir: '/etc/rcp', env: { HOME_URL: 'http://127.0.0.1:9/rcp' } },
    );
    expect(loaded.config.engines[0]).toMatchObject({ url: 'http://127.0.0.1:9/rcp', weight: 1.5, priority: 5 });
    expect(loaded.config.gateway).toMatchObject({ port: 8787, basePath: '/rcp', rrfK: 60 });
  });

  it('resolves relative stdio commands against the config folder', () => {
    const loaded = parseConfig(
      { engines: [{ id: 's', transport: 'stdio', command: ['./bin/engine', '--flag', '../data/x'] }] },
      { baseDir: '/etc/rcp' },
    );
    expect(loaded.config.engines[0]!.command).toEqual(['/etc/rcp/bin/engine', '--flag', '/etc/data/x']);
    expect(loaded.config.engines[0]!.cwd).toBe('/etc/rcp');
  });

  it('ships configs that validate (default and example)', () => {
    for (const name of ['default.json', 'example.json']) {
      const loaded = loadConfigFile(path.join(REPO_ROOT, 'config', name), {});
      expect(loaded.config.engines.length).toBeGreaterThanOrEqual(2);
    }
  });

  it('makes the CLI exit non-zero with the message', () => {
    const file = writeConfig(tmpDir(), {
      engines: [
        { id: 'a', transport: 'http', url: 'http://127.0.0.1:1/rcp' },
        { id: 'b', transport: 'http', url: 'not a url' },
      ],
    });
    const run = spawnSync(process.execPath, [GATEWAY_CLI, 'serve', '--config', file, '--port', '0'], { encoding: 'utf8', timeout: 20_000 });
    expect(run.status).toBe(2);
    expect(run.stderr).toContain('engines[1].url: expected an http(s) URL');
    expect(run.stdout).toBe('');
  });
});

describe('relative stdio command end to end', () => {
  let gateway: GatewayHandle | undefined;
  afterAll(async () => {
    await gateway?.stop();
  });

  it('starts an engine whose command is relative to the config file', async () => {
    const dir = tmpDir();
    writeFileSync(path.join(dir, 'engine.mjs'), `import ${JSON.stringify(ENGINE_PATH)};\n`);
    const file = writeConfig(dir, {
      engines: [{ id: 'rel', transport: 'stdio', command: ['node', './engine.mjs', '--transport', 'stdio', '--id', 'rel'] }],
    });
    gateway = await startGateway({ configFile: file });
    const res = await rpc<{ hits: Array<{ meta: { engine: string } }> }>(gateway.url, 'retrieve', { query: 'memory context', k: 2 });
    expect(res.result!.hits.map((h) => h.meta.engine)).toEqual(['rel', 'rel']);
    expect(REPO_ROOT).not.toBe(dir);
  });
});
