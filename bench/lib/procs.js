/**
 * Processes under test: the fast engines and the bare ceiling (forked, they report over IPC),
 * the gateway (spawned from dist/ as a user runs it), and what /proc says about them (CPU time
 * and resident memory), so per-request CPU cost can be reported next to req/s.
 */
import { execFileSync, fork, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
/** Node options that let the memory scenario collect the gateway's heap on SIGUSR2. */
export const GC_HOOK_ARGS = ['--expose-gc', '--import', path.join(ROOT, 'bench/lib/gc-hook.js')];
const GATEWAY_CLI = path.join(ROOT, 'dist/cli/main.js');
const live = new Set();
process.once('exit', () => {
  for (const child of live) child.kill('SIGKILL');
});

function track(child) {
  live.add(child);
  child.once('exit', () => live.delete(child));
  return child;
}

function stopper(child) {
  return () =>
    new Promise((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) return resolve();
      const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      child.once('exit', () => {
        clearTimeout(timer);
        resolve();
      });
      child.kill('SIGTERM');
    });
}

/** Fork a bench script and wait for its `{type:'listening'}` IPC message. */
function forkListening(script, args, execArgv = process.execArgv) {
  const child = track(fork(path.join(ROOT, script), args, { execArgv, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] }));
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`${script} exited (${code}) before listening`)));
    child.on('message', function onMessage(message) {
      if (message.type !== 'listening') return;
      child.off('message', onMessage);
      resolve({ child, message, pid: child.pid, stop: stopper(child) });
    });
  });
}

/** `count` fast engines in one process (`hits` per answer); `urls[i]` is engine i's RCP base URL. */
export async function startEngines(count, { hits = 20 } = {}) {
  const started = await forkListening('bench/lib/engine.js', ['--count', String(count), '--hits', String(hits)]);
  const { child } = started;
  const ask = (type, extra = {}) => child.send({ type, ...extra });
  return {
    ...started,
    urls: started.message.ports.map((port) => `http://127.0.0.1:${port}/rcp`),
    hold: (on) => ask('hold', { on }),
    release: () => ask('release'),
    held: () =>
      new Promise((resolve) => {
        child.on('message', function onMessage(message) {
          if (message.type !== 'held') return;
          child.off('message', onMessage);
          resolve(message.count);
        });
        ask('held?');
      }),
  };
}

/** Scenario D's bare fan-out script in front of `engineUrls`; `nodeArgs` are node's flags for it. */
export async function startBare(engineUrls, { nodeArgs } = {}) {
  const started = await forkListening('bench/lib/bare.js', ['--engines', engineUrls.join(',')], nodeArgs);
  return { ...started, url: started.message.url };
}

/** The spec floor (bare fan-out plus the work RCP/1 requires of a gateway) in front of `engineUrls`. */
export async function startSpecFloor(engineUrls, { skip = [], args: extra = [], nodeArgs } = {}) {
  const args = ['--engines', engineUrls.join(','), ...extra];
  if (skip.length > 0) args.push('--skip', skip.join(','));
  const started = await forkListening('bench/lib/spec-floor.js', args, nodeArgs);
  return { ...started, url: started.message.url };
}

/**
 * A child's stderr, drained as a log collector would: the last 20 kB kept as chunks (joined only
 * when asked for), and one pattern looked for until it is seen. The gateway writes a line per
 * request there, so this runs beside the load generator: it must cost next to nothing per chunk
 * (copying and scanning the whole tail per chunk cost the load generator enough CPU to lower the
 * gateway's measured throughput; bench/RESULTS.md, 2026-12-02).
 */
function stderrTail(child, keep = 20_000) {
  const chunks = [];
  let length = 0;
  let wanted;
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (chunk) => {
    chunks.push(chunk);
    length += chunk.length;
    while (chunks.length > 1 && length - chunks[0].length >= keep) length -= chunks.shift().length;
    if (wanted) {
      const match = wanted.pattern.exec(chunks.join(''));
      if (match) {
        const { found } = wanted;
        wanted = undefined;
        found(match);
      }
    }
  });
  return {
    text: () => chunks.join('').slice(-keep),
    onLine: (pattern, found) => {
      wanted = { pattern, found };
    },
  };
}

/**
 * The gateway from dist/ (`serve --config FILE --port 0`), federating `engineUrls` over HTTP.
 * `gateway` overrides gateway settings; `workers` adds `--workers N`; `cli` runs another build.
 */
export async function startGateway(engineUrls, { gateway = {}, workers, nodeArgs = [], cli = GATEWAY_CLI, env = {} } = {}) {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'rcp-bench-'));
  const configFile = path.join(dir, 'gateway.json');
  writeFileSync(
    configFile,
    JSON.stringify(
      {
        engines: engineUrls.map((url, i) => ({ id: `e${i}`, transport: 'http', url })),
        gateway,
      },
      null,
      2,
    ),
  );
  const args = [...nodeArgs, cli, 'serve', '--config', configFile, '--port', '0'];
  if (workers !== undefined) args.push('--workers', String(workers));
  const child = track(spawn(process.execPath, args, { cwd: dir, env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'pipe'] }));
  const stderr = stderrTail(child);
  const url = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`gateway did not start within 30 s:\n${stderr.text().slice(-2000)}`)), 30_000);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`gateway exited (${code}) before listening:\n${stderr.text().slice(-2000)}`));
    });
    stderr.onLine(/listening on (http:\/\/\S+)/, (match) => {
      clearTimeout(timer);
      resolve(match[1]);
    });
  });
  const stop = stopper(child);
  return {
    url,
    pid: child.pid,
    dir,
    child,
    stderr: () => stderr.text(),
    stop: async () => {
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * Pin every thread of `pid` to CPU `cpu` (taskset -a). Returns false, pinning nothing, where that
 * cannot be done: one CPU, or no taskset. Callers measure unpinned then, and say so.
 */
export function pinToCpu(pid, cpu) {
  // The machine's CPUs, not availableParallelism(): that follows this process's own affinity, one CPU once pinned.
  if (os.cpus().length < 2) return false;
  try {
    execFileSync('taskset', ['-a', '-p', '-c', String(cpu), String(pid)], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** `pid` and every process below it (cluster workers), from /proc. */
export function processTree(pid) {
  const parentOf = new Map();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      parentOf.set(Number(entry), Number(fields[1]));
    } catch {
      // the process ended while we looked
    }
  }
  const tree = [pid];
  for (let i = 0; i < tree.length; i++) {
    for (const [child, parent] of parentOf) if (parent === tree[i]) tree.push(child);
  }
  return tree;
}

const TICK_MS = 1000 / 100; // USER_HZ is 100 on Linux

/** User + system CPU milliseconds consumed so far by `pids` (0 where /proc is unavailable). */
export function cpuMs(pids) {
  let total = 0;
  for (const pid of pids) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      total += (Number(fields[11]) + Number(fields[12])) * TICK_MS;
    } catch {
      // gone, or not Linux
    }
  }
  return total;
}

/** Resident set size of `pid` in bytes (VmRSS), or NaN off Linux. */
export function rssBytes(pid) {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const match = /VmRSS:\s+(\d+) kB/.exec(status);
    return match ? Number(match[1]) * 1024 : NaN;
  } catch {
    return NaN;
  }
}
