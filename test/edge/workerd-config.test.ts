/**
 * How a Worker gets its config: bundled at build time (`npm run build:edge -- --config FILE`, with
 * `${NAME}` left for the Worker's bindings), and what a bad one does (HTTP 500 naming every
 * problem, the stdio engine by its entry). Under workerd through miniflare.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rpc } from '../support/http-client.js';
import { REPO_ROOT, startHttpEngine, tmpDir, writeConfig, type EngineHandle } from '../support/processes.js';
import { EDGE_DIST, WORKERD_COMPATIBILITY, workerd } from './runtimes.js';

const unavailable = workerd.unavailable;
const VERSION = (JSON.parse(readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string }).version;

describe.skipIf(unavailable !== undefined)(`workerd config${unavailable ? ` (skipped: ${unavailable})` : ''}`, () => {
  const out = tmpDir('rcp-edge-bundle-');
  let engine: EngineHandle;
  let mf: import('miniflare').Miniflare;
  let url: string;

  beforeAll(async () => {
    engine = await startHttpEngine(['--id', 'web']);
    const configFile = writeConfig(out, {
      engines: [{ id: 'web', transport: 'http', url: '${WEB_ENGINE_URL}' }],
      gateway: { name: 'bundled-edge', cursorSecret: '${RCPGW_CURSOR_SECRET}' },
    });
    const build = spawnSync(process.execPath, [path.join(REPO_ROOT, 'scripts/build-edge.mjs'), '--config', configFile, '--outdir', out], {
      encoding: 'utf8',
    });
    expect(build.status, build.stderr).toBe(0);
    const { Miniflare } = await import('miniflare');
    mf = new Miniflare({
      modules: true,
      modulesRoot: out,
      scriptPath: path.join(out, 'worker.js'),
      compatibilityDate: WORKERD_COMPATIBILITY.date,
      compatibilityFlags: WORKERD_COMPATIBILITY.flags,
      bindings: { WEB_ENGINE_URL: engine.url, RCPGW_CURSOR_SECRET: 'a-secret-from-a-worker-binding' },
      host: '127.0.0.1',
    });
    url = new URL('rcp', await mf.ready).href;
  });

  afterAll(async () => {
    await mf?.dispose();
    await engine?.stop();
  });

  it('serves the config bundled at build time, its ${NAME}s read from the bindings', async () => {
    const info = await rpc<{ server: { name: string; version?: string } }>(url, 'initialize', {
      protocolVersion: 1,
      client: { name: 'edge-test' },
      capabilities: {},
    });
    expect(info.result?.server).toEqual({ name: 'bundled-edge', version: VERSION });
    const found = await rpc<{ hits: unknown[]; nextCursor?: string }>(url, 'retrieve', { query: 'retrieval fusion', k: 2 });
    expect(found.result?.hits).toHaveLength(2);
    expect(typeof found.result?.nextCursor).toBe('string');
  });

  it('answers every request with 500 and the problems when its config is bad', async () => {
    await mf.setOptions({
      modules: true,
      modulesRoot: EDGE_DIST,
      scriptPath: path.join(EDGE_DIST, 'worker.js'),
      compatibilityDate: WORKERD_COMPATIBILITY.date,
      compatibilityFlags: WORKERD_COMPATIBILITY.flags,
      bindings: {
        RCPGW_CONFIG: JSON.stringify({
          engines: [
            { id: 'web', transport: 'http', url: engine.url },
            { id: 'local', transport: 'stdio', command: ['node', 'engine.js'] },
          ],
        }),
      },
      host: '127.0.0.1',
    });
    const base = new URL('rcp', await mf.ready).href;
    for (const method of ['ping', 'retrieve']) {
      const res = await fetch(`${base}/${method}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params: {} }),
      });
      expect(res.status).toBe(500);
      expect(await res.json()).toEqual({
        error: 'invalid gateway config',
        problems: [
          expect.stringMatching(/^engines\[1\]\.transport: stdio engines cannot run at the edge/),
          expect.stringMatching(/^gateway\.cursorSecret: required at the edge/),
        ],
      });
    }
  });
});
