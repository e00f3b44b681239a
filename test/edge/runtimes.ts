/**
 * The edge runtimes under test, each serving the bundle `npm run build` wrote to dist-edge/:
 * workerd through miniflare (in this process, its runtime a child of it), Deno and Bun as child
 * processes from their npm packages. A runtime whose binary is missing or does not start here
 * says why, and its suite is skipped with that reason in its name.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { REPO_ROOT, spawnCaptured, stopChild, tmpDir, waitForLine, writeConfig } from '../support/processes.js';

export const EDGE_DIST = path.join(REPO_ROOT, 'dist-edge');
const BIN = path.join(REPO_ROOT, 'node_modules/.bin');

/** The compatibility settings deploy/edge/wrangler.toml deploys with. */
export const WORKERD_COMPATIBILITY = { date: '2026-04-26', flags: ['nodejs_compat', 'enable_request_signal'] };

export interface EdgeServer {
  /** The RCP base URL (ends in `/rcp`). */
  url: string;
  /** Everything the runtime wrote (the gateway's JSON log lines among it). */
  output(): string;
  stop(): Promise<unknown>;
}

export interface EdgeRuntime {
  name: string;
  /** Why it cannot run here; undefined when it can. */
  unavailable: string | undefined;
  /**
   * Why a client leaving before any byte of its answer was written goes unnoticed; undefined
   * when it is noticed (Node, Deno and Bun watch the socket).
   */
  silentDisconnectUnnoticed: string | undefined;
  start(config: object): Promise<EdgeServer>;
}

/** Why `binary --version` cannot run here, or undefined. */
function unusable(binary: string, what: string): string | undefined {
  if (!existsSync(binary)) return `${what} binary not installed (${path.relative(REPO_ROOT, binary)})`;
  const probe = spawnSync(binary, ['--version'], { encoding: 'utf8', timeout: 30_000 });
  if (probe.status !== 0) return `${what} does not start here: ${(probe.stderr || String(probe.error ?? '')).trim().slice(0, 200)}`;
  return undefined;
}

function bundleMissing(name: string): string | undefined {
  return existsSync(path.join(EDGE_DIST, `${name}.js`)) ? undefined : `dist-edge/${name}.js missing (run npm run build)`;
}

/** A runtime child process serving `entry` with `--config FILE --port 0`. */
async function startProcess(binary: string, args: (configFile: string) => string[], config: object, what: string): Promise<EdgeServer> {
  const configFile = writeConfig(tmpDir(`rcp-${what}-`), config);
  const { proc, out } = spawnCaptured(binary, args(configFile), { env: { ...process.env, NO_COLOR: '1', DENO_NO_UPDATE_CHECK: '1' } });
  const match = await waitForLine(proc, /listening on (http:\/\/\S+)/, out, 30_000, what);
  return { url: match[1]!, output: () => out.stdout + out.stderr, stop: () => stopChild(proc) };
}

export const deno: EdgeRuntime = {
  name: 'Deno',
  unavailable: bundleMissing('deno') ?? unusable(path.join(BIN, 'deno'), 'deno'),
  silentDisconnectUnnoticed: undefined,
  start: (config) =>
    startProcess(
      path.join(BIN, 'deno'),
      (file) => [
        // The permissions docs/edge.md lists: network, the config file, the environment.
        'run',
        '--allow-net',
        `--allow-read=${file}`,
        '--allow-env',
        path.join(EDGE_DIST, 'deno.js'),
        '--config',
        file,
        '--port',
        '0',
      ],
      config,
      'deno',
    ),
};

export const bun: EdgeRuntime = {
  name: 'Bun',
  unavailable: bundleMissing('bun') ?? unusable(path.join(BIN, 'bun'), 'bun'),
  silentDisconnectUnnoticed: undefined,
  start: (config) =>
    startProcess(path.join(BIN, 'bun'), (file) => [path.join(EDGE_DIST, 'bun.js'), '--config', file, '--port', '0'], config, 'bun'),
};

export const workerd: EdgeRuntime = {
  name: 'workerd (miniflare)',
  unavailable: bundleMissing('worker') ?? unusable(path.join(BIN, 'workerd'), 'workerd'),
  silentDisconnectUnnoticed: 'workerd notices a client gone only when it next writes to it (an SSE frame or heartbeat)',
  async start(config) {
    const { Miniflare } = await import('miniflare');
    let output = '';
    const collect = (stream: NodeJS.ReadableStream): void => {
      stream.setEncoding('utf8');
      stream.on('data', (chunk: string) => {
        output += chunk;
      });
    };
    const mf = new Miniflare({
      modules: true,
      modulesRoot: EDGE_DIST,
      scriptPath: path.join(EDGE_DIST, 'worker.js'),
      compatibilityDate: WORKERD_COMPATIBILITY.date,
      compatibilityFlags: WORKERD_COMPATIBILITY.flags,
      bindings: { RCPGW_CONFIG: JSON.stringify(config) },
      host: '127.0.0.1',
      handleRuntimeStdio: (stdout: NodeJS.ReadableStream, stderr: NodeJS.ReadableStream) => {
        collect(stdout);
        collect(stderr);
      },
    });
    const url = await mf.ready;
    return { url: new URL('rcp', url).href, output: () => output, stop: () => mf.dispose() };
  },
};
