/**
 * Operator commands run as a user would: `rcp-gateway check-config` (exit 0 / 1 / 2 and its
 * table) and `rcp-gateway engines` against a running gateway; `--help` on every command.
 */
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { rpc } from '../support/http-client.js';
import { startGateway, stdioEngineCommand, tmpDir, writeConfig } from '../support/processes.js';
import { suiteProcesses } from '../support/suite.js';
import { schemaCrossCheck } from '../support/spec-validator.js';
import { runCli } from './support.js';

const procs = suiteProcesses();
const engine = procs.engine;

/** The table row (whitespace-split cells) whose first cell starts with `id`. */
function row(stdout: string, id: string): string | undefined {
  return stdout.split('\n').find((line) => line.split(/\s+/)[0] === id);
}

describe('--help', () => {
  it('is available on every command and exits 0', async () => {
    const commands = [[], ['serve'], ['stdio'], ['check-config'], ['engines']];
    const results = await Promise.all(commands.map((command) => runCli([...command, '--help'])));
    results.forEach((res, i) => {
      expect(res.code).toBe(0);
      expect(res.stdout).toContain(`rcp-gateway ${commands[i]![0] ?? ''}`.trim());
    });
    const check = await runCli(['check-config', '--help']);
    expect(check.stdout).toContain('--timeout MS');
    expect(check.stdout).toContain('Exit status');
  });
});

describe('check-config', () => {
  it('prints a table and exits 0 when every engine is reachable', async () => {
    const web = await engine(['--id', 'web']);
    const file = writeConfig(tmpDir(), {
      engines: [
        { id: 'web', transport: 'http', url: web.url, required: true, breaker: { volumeThreshold: 7 } },
        {
          id: 'local',
          transport: 'stdio',
          command: stdioEngineCommand(['--id', 'local', '--caps', JSON.stringify({ retrieve: {}, embed: { dims: 4 } })]),
        },
      ],
      gateway: { breaker: { errorThresholdPercentage: 40 } },
    });
    const res = await runCli(['check-config', '--config', file]);
    expect(res.stderr).toBe('');
    expect(res.code).toBe(0);
    expect(res.stdout).toContain('valid config, 2 engine(s)');
    expect(res.stdout).toMatch(/^ENGINE\s+TRANSPORT\s+TARGET\s+REACHABLE\s+SERVER\s+CAPABILITIES\s+BREAKER/m);
    const webRow = row(res.stdout, 'web')!;
    expect(webRow).toContain('(required)');
    expect(webRow).toContain(web.url);
    expect(webRow).toMatch(/\byes\b/);
    expect(webRow).toContain('test-engine-web');
    expect(webRow).toContain('retrieve,streaming');
    expect(webRow).toContain('open at 40% of >=7 calls/10s');
    const localRow = row(res.stdout, 'local')!;
    expect(localRow).toMatch(/stdio .*\byes\b/);
    expect(localRow).toContain('retrieve,embed');
    // The probe's stdio engine was stopped again: nothing is left running under our name.
    const json = await runCli(['check-config', '--config', file, '--json']);
    expect(json.code).toBe(0);
    const report = JSON.parse(json.stdout) as {
      valid: boolean;
      engines: Array<{ id: string; reachable: boolean; capabilities: string[] }>;
    };
    expect(report.valid).toBe(true);
    expect(report.engines.map((e) => [e.id, e.reachable])).toEqual([
      ['web', true],
      ['local', true],
    ]);
  });

  it('exits 1 and names the engine when one is unreachable', async () => {
    const dir = tmpDir();
    const file = writeConfig(dir, {
      engines: [
        { id: 'nowhere', transport: 'http', url: 'http://127.0.0.1:9/rcp' },
        { id: 'broken', transport: 'stdio', command: stdioEngineCommand(['--id', 'broken', '--fault-init', 'crash']) },
        { id: 'fine', transport: 'stdio', command: stdioEngineCommand(['--id', 'fine']) },
      ],
    });
    const res = await runCli(['check-config', '--config', file, '--timeout', '2000']);
    expect(res.code).toBe(1);
    expect(row(res.stdout, 'nowhere')).toMatch(/NO: /);
    expect(row(res.stdout, 'broken')).toMatch(/NO: /);
    expect(row(res.stdout, 'fine')).toMatch(/\byes\b/);
    expect(res.stdout).toContain('2 engine(s) unreachable: nowhere, broken');
    // --no-probe validates only.
    const offline = await runCli(['check-config', '--config', file, '--no-probe']);
    expect(offline.code).toBe(0);
    expect(row(offline.stdout, 'nowhere')).toContain('not probed');
  });

  it('exits 2 with the exact problem for an invalid config', async () => {
    const file = writeConfig(tmpDir(), {
      engines: [
        { id: 'x', transport: 'http', url: 'ftp://nope' },
        { id: 'x', transport: 'stdio' },
      ],
    });
    const res = await runCli(['check-config', '--config', file]);
    expect(res.code).toBe(2);
    expect(res.stderr).toContain('engines[0].url: expected an http(s) URL');
    expect(res.stderr).toContain('engines[1].command');
    expect(res.stderr).toContain('duplicate engine id "x"');
    expect((await runCli(['check-config', '--config', path.join(tmpDir(), 'missing.json')])).code).toBe(2);
    expect((await runCli(['check-config', '--bogus'])).code).toBe(2);
  });
});

describe('engines', () => {
  it('shows live engine state of a running gateway', async () => {
    const web = await engine(['--id', 'web']);
    const gw = await startGateway({
      config: {
        engines: [
          { id: 'web', transport: 'http', url: web.url, weight: 2, priority: 3 },
          { id: 'dead', transport: 'http', url: 'http://127.0.0.1:9/rcp' },
        ],
      },
    });
    procs.defer(() => gw.stop());
    expect((await rpc(gw.url, 'retrieve', { query: 'graph', k: 2 })).result).toBeDefined();
    const res = await runCli(['engines', '--url', gw.url]);
    expect(res.code).toBe(0);
    expect(res.stdout).toMatch(/^ENGINE\s+STATUS\s+BREAKER\s+QUEUE\s+WEIGHT\s+PRIORITY\s+REQUIRED\s+CAPABILITIES\s+LAST ERROR/m);
    expect(row(res.stdout, 'web')).toMatch(/^web\s+ready\s+closed\s+0\s+2\s+3\s+false\s+retrieve,streaming\s+-$/);
    expect(row(res.stdout, 'dead')).toMatch(/^dead\s+down\s+closed\s+0\s+1\s+0\s+false\s+-\s+\S/);
    const json = await runCli(['engines', '--url', gw.url, '--json']);
    expect(json.code).toBe(0);
    const parsed = JSON.parse(json.stdout) as { engines: Array<{ id: string; _meta: { status: string } }> };
    expect(parsed.engines.map((e) => [e.id, e._meta.status])).toEqual([
      ['web', 'ready'],
      ['dead', 'down'],
    ]);
  });

  it('exits 1 when the gateway cannot be reached', async () => {
    const res = await runCli(['engines', '--url', 'http://127.0.0.1:9/rcp', '--timeout', '2000']);
    expect(res.code).toBe(1);
    expect(res.stderr).toContain('cannot reach http://127.0.0.1:9/rcp');
  });
});

schemaCrossCheck();
