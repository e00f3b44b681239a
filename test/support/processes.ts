/**
 * Process helpers for integration tests: spawn test engines and the gateway,
 * read the engines' event logs, and make sure nothing outlives the test run.
 */
import { spawn } from 'node:child_process';
import type { ChildProcess, ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { REPO_ROOT } from './spec-validator.js';

export { REPO_ROOT };
/** The independent RCP test engine (plain JS, spawnable by node directly). */
export const ENGINE_PATH = path.join(REPO_ROOT, 'test/engines/test-engine.mjs');
/** The built gateway CLI (`npm run build` must have run). */
export const GATEWAY_CLI = path.join(REPO_ROOT, 'dist/cli/main.js');

// ------------------------------------------------------------ lifecycle --
const children = new Set<ChildProcess>();
const dirs = new Set<string>();
let hooked = false;
/** Kill `child` when this (test) process exits, if it is still running. */
export function trackChild(child: ChildProcess): void {
  children.add(child);
  child.once('exit', () => children.delete(child));
  if (hooked) return;
  hooked = true;
  process.once('exit', () => {
    for (const c of children) {
      try {
        c.kill('SIGKILL');
      } catch {
        /* already gone */
      }
    }
    for (const d of dirs) {
      try {
        rmSync(d, { recursive: true, force: true });
      } catch {
        /* best effort */
      }
    }
  });
}

/** SIGTERM, then SIGKILL after `graceMs`; resolves with the exit code (null if signalled). */
export async function stopChild(child: ChildProcess, graceMs = 2_000): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  child.kill('SIGTERM');
  const t = setTimeout(() => child.kill('SIGKILL'), graceMs);
  const code = await exited;
  clearTimeout(t);
  return code;
}

// ----------------------------------------------------------------- files --
/** A fresh temp directory, removed when the test process exits. */
export function tmpDir(prefix = 'rcp-test-'): string {
  const d = mkdtempSync(path.join(os.tmpdir(), prefix));
  dirs.add(d);
  return d;
}
/** Write `obj` as JSON into `dir/name`; returns the path. */
export function writeConfig(dir: string, obj: unknown, name = 'gateway.json'): string {
  const file = path.join(dir, name);
  writeFileSync(file, JSON.stringify(obj, null, 2));
  return file;
}
/** Atomically replace an engine's `--control` file (write + rename, so a reader never sees half). */
export function writeControl(file: string, obj: Record<string, unknown>): void {
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, JSON.stringify(obj));
  renameSync(tmp, file);
}

// ---------------------------------------------------------------- events --
/** One line of a test engine's `--events` NDJSON file. */
export interface EngineEvent {
  ev: 'start' | 'request' | 'notification' | 'cancel' | 'abort' | 'response' | 'crash' | 'exit';
  engine: string;
  t: number;
  id?: string | number | null;
  method?: string;
  params?: Record<string, unknown>;
  headers?: Record<string, string | string[]>;
  code?: number | null;
  fault?: string;
  known?: boolean;
  pid?: number;
  transport?: string;
  port?: number;
}

/** All complete events in `file` (a missing file reads as none). */
export function readEvents(file: string): EngineEvent[] {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return [];
  }
  const lines = text.split('\n');
  lines.pop(); // the part after the last newline is empty or still being written
  return lines.filter((l) => l.trim() !== '').map((l) => JSON.parse(l) as EngineEvent);
}

/** Resolve with the first event matching `predicate`, polling the file; rejects after `timeoutMs`. */
export async function waitForEvent(file: string, predicate: (e: EngineEvent) => boolean, timeoutMs = 10_000): Promise<EngineEvent> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const hit = readEvents(file).find(predicate);
    if (hit) return hit;
    if (Date.now() > deadline) {
      throw new Error(
        `waitForEvent timed out after ${timeoutMs} ms on ${file}; events:\n${readEvents(file)
          .slice(-20)
          .map((e) => JSON.stringify(e))
          .join('\n')}`,
      );
    }
    await new Promise((r) => setTimeout(r, 10));
  }
}

// --------------------------------------------------------- line waiting --
/** Resolve with the first match of `re` on `child`'s stdout or stderr (line-wise); reject on exit/timeout. */
export function waitForLine(
  child: ChildProcessWithoutNullStreams,
  re: RegExp,
  out: { stdout: string; stderr: string },
  timeoutMs: number,
  what: string,
): Promise<RegExpMatchArray> {
  return new Promise((resolve, reject) => {
    const check = (): boolean => {
      for (const text of [out.stdout, out.stderr]) {
        const lines = text.split('\n');
        lines.pop(); // only complete lines
        for (const line of lines) {
          const m = line.match(re);
          if (m) {
            done();
            resolve(m);
            return true;
          }
        }
      }
      return false;
    };
    const onExit = (code: number | null, signal: string | null): void => {
      done();
      reject(
        new Error(
          `${what} exited (code ${code}, signal ${signal}) before printing ${re}\nstdout:\n${out.stdout.slice(-2000)}\nstderr:\n${out.stderr.slice(-2000)}`,
        ),
      );
    };
    const timer = setTimeout(() => {
      done();
      reject(new Error(`${what} did not print ${re} within ${timeoutMs} ms\nstderr:\n${out.stderr.slice(-2000)}`));
    }, timeoutMs);
    const done = (): void => {
      clearTimeout(timer);
      child.stdout.off('data', check);
      child.stderr.off('data', check);
      child.off('exit', onExit);
    };
    child.stdout.on('data', check);
    child.stderr.on('data', check);
    child.once('exit', onExit);
    check();
  });
}

/**
 * A process whose start failed (it did not announce itself in time) is stopped before the error
 * is passed on: no handle reaches the test, so nothing else would stop it, and a test process
 * ended by a signal never runs its 'exit' hook.
 */
async function stopIfFailed<T>(child: ChildProcess, started: Promise<T>): Promise<T> {
  try {
    return await started;
  } catch (err) {
    await stopChild(child);
    throw err;
  }
}

export function spawnCaptured(
  cmd: string,
  args: string[],
  opts: { cwd?: string; env?: NodeJS.ProcessEnv },
): { proc: ChildProcessWithoutNullStreams; out: { stdout: string; stderr: string } } {
  const proc = spawn(cmd, args, { cwd: opts.cwd ?? REPO_ROOT, env: opts.env ?? process.env, stdio: ['pipe', 'pipe', 'pipe'] });
  trackChild(proc);
  const out = { stdout: '', stderr: '' };
  proc.stdout.setEncoding('utf8');
  proc.stderr.setEncoding('utf8');
  // Registered before any waiter, so the buffers are current when waiters run.
  proc.stdout.on('data', (c: string) => {
    out.stdout += c;
  });
  proc.stderr.on('data', (c: string) => {
    out.stderr += c;
  });
  proc.stdin.on('error', () => {
    /* child gone */
  });
  return { proc, out };
}

// --------------------------------------------------------------- engines --
export interface EngineHandle {
  /** Base URL, e.g. `http://127.0.0.1:PORT/rcp`. */
  url: string;
  port: number;
  proc: ChildProcessWithoutNullStreams;
  eventsFile: string;
  stderr(): string;
  stop(): Promise<number | null>;
}
export interface EngineSpawnOptions {
  timeoutMs?: number;
  env?: NodeJS.ProcessEnv;
}

/** The argv that runs the test engine over stdio (for gateway configs / StdioClient). */
export function stdioEngineCommand(args: string[] = []): string[] {
  return [process.execPath, ENGINE_PATH, '--transport', 'stdio', ...args];
}

/**
 * Spawn the test engine over HTTP on an ephemeral port. Adds `--events <tmp>`
 * unless `args` already has `--events`. Resolves once it printed `{"listening":port}`.
 */
export async function startHttpEngine(args: string[] = [], opts: EngineSpawnOptions = {}): Promise<EngineHandle> {
  const full = [...args];
  const at = full.indexOf('--events');
  let eventsFile = at >= 0 ? full[at + 1] : undefined;
  if (!eventsFile) {
    eventsFile = path.join(tmpDir('rcp-engine-'), 'events.ndjson');
    if (at >= 0) full.splice(at, 1);
    full.push('--events', eventsFile);
  }
  const { proc, out } = spawnCaptured(
    process.execPath,
    [ENGINE_PATH, '--transport', 'http', '--port', '0', '--host', '127.0.0.1', ...full],
    { env: opts.env },
  );
  const m = await stopIfFailed(proc, waitForLine(proc, /^\{"listening":(\d+)\}$/, out, opts.timeoutMs ?? 10_000, 'test engine'));
  const port = Number(m[1]);
  return {
    url: `http://127.0.0.1:${port}/rcp`,
    port,
    proc,
    eventsFile,
    stderr: () => out.stderr,
    stop: () => stopChild(proc),
  };
}

// --------------------------------------------------------------- gateway --
export interface GatewayOptions {
  /** A config object (written to a temp file) ... */
  config?: unknown;
  /** ... or an existing config file. */
  configFile?: string;
  /** Extra CLI arguments after `serve --config FILE --port 0`. */
  args?: string[];
  env?: NodeJS.ProcessEnv;
  timeoutMs?: number;
}
export interface GatewayHandle {
  /** The base URL the gateway announced (ends in `/rcp`). */
  url: string;
  proc: ChildProcessWithoutNullStreams;
  configFile: string;
  stdout(): string;
  stderr(): string;
  stop(): Promise<number | null>;
}

/** Spawn `node dist/cli/main.js serve --config FILE --port 0` and wait for `listening on <url>`. */
export async function startGateway(opts: GatewayOptions): Promise<GatewayHandle> {
  const configFile = opts.configFile ?? writeConfig(tmpDir('rcp-gw-'), opts.config ?? {});
  const args = [GATEWAY_CLI, 'serve', '--config', configFile, '--port', '0', ...(opts.args ?? [])];
  const { proc, out } = spawnCaptured(process.execPath, args, { env: opts.env });
  const m = await stopIfFailed(proc, waitForLine(proc, /listening on (http:\/\/[^\s"'<>,]+)/, out, opts.timeoutMs ?? 20_000, 'gateway'));
  const url = (m[1] ?? '').replace(/[.)\]}]+$/, '');
  return {
    url,
    proc,
    configFile,
    stdout: () => out.stdout,
    stderr: () => out.stderr,
    stop: () => stopChild(proc),
  };
}
