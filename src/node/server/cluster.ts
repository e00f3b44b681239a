/**
 * `serve --workers N`: one Node process runs JavaScript on about one core, so the primary forks
 * N workers (node:cluster) that each run the ordinary serve path and share one listening port.
 * Workers are stateless replicas of each other (HTTP is stateless, §5.2): each has its own
 * engine pools, breakers, metrics and — for stdio engines — its own engine child processes.
 *
 * The primary does no RCP work. It picks the port (a free one for `--port 0`, so every worker
 * binds the same), forks, prints the single `listening on` line once every worker reported its
 * URL over IPC, forwards SIGTERM/SIGINT/SIGHUP, and replaces a worker that dies unexpectedly
 * (with a growing delay when they keep dying). A worker that dies before it ever listened stops
 * the whole start: its error (bad engine, port in use) is not fixed by retrying.
 */
import cluster, { type Worker } from 'node:cluster';
import { randomBytes } from 'node:crypto';
import net from 'node:net';
import os from 'node:os';
import type { Logger } from '../observability/log.js';
import { serveClusterMetrics } from '../observability/cluster-metrics.js';

/** Set by the primary for its workers: the port every worker listens on. */
const WORKER_PORT_ENV = 'RCPGW_WORKER_PORT';
/**
 * Set by the primary: one pagination-cursor key for every worker, used when `gateway.cursorSecret`
 * is not configured. Without it each worker would sign with its own random key and a cursor
 * issued by one worker would not open on the next (§10: any replica must serve the next page).
 */
const WORKER_CURSOR_SECRET_ENV = 'RCPGW_WORKER_CURSOR_SECRET';
/**
 * Set by the primary: the worker's slot, 1..N. A worker that replaces a dead one takes over its
 * slot, so `${RCPGW_WORKER_ID}` in the config names a stable per-worker resource (a data folder).
 */
const WORKER_ID_ENV = 'RCPGW_WORKER_ID';
const LISTENING = 'rcpgw:listening';

const RESTART_BASE_MS = 100;
const RESTART_CAP_MS = 10_000;
/** Unexpected exits within this window count towards the restart delay. */
const CRASH_WINDOW_MS = 60_000;

/** `--workers` value → a worker count; `auto` = the cores Node may use. undefined when invalid. */
export function parseWorkers(text: string | undefined): number | undefined {
  if (text === undefined) return 1;
  if (text === 'auto') return Math.max(1, os.availableParallelism());
  const n = Number(text);
  return Number.isInteger(n) && n >= 1 && n <= 1024 ? n : undefined;
}

/** True inside a worker forked by `runPrimary`. */
export function isGatewayWorker(): boolean {
  return cluster.isWorker && process.env[WORKER_PORT_ENV] !== undefined;
}

/** The port the primary chose for this worker (undefined outside a worker). */
export function workerPort(): number | undefined {
  const text = isGatewayWorker() ? process.env[WORKER_PORT_ENV] : undefined;
  return text === undefined ? undefined : Number(text);
}

/** The cursor key the primary handed this worker (undefined outside a worker). */
export function workerCursorSecret(): string | undefined {
  return isGatewayWorker() ? process.env[WORKER_CURSOR_SECRET_ENV] : undefined;
}

/** A worker tells the primary it listens; a single process prints the line itself. */
export function announceListening(url: string): void {
  if (isGatewayWorker() && process.send) process.send({ type: LISTENING, url });
  else process.stderr.write(`rcp-gateway listening on ${url}\n`);
}

/** A port that was free a moment ago on `host` (the OS picks it; released before the workers bind). */
function freePort(host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = net.createServer();
    probe.once('error', reject);
    probe.listen(0, host, () => {
      const address = probe.address() as net.AddressInfo;
      probe.close(() => resolve(address.port));
    });
  });
}

export interface PrimaryOptions {
  workers: number;
  host: string;
  /** 0 = pick a free port once, for every worker. */
  port: number;
  logger: Logger;
  /** How long workers get to drain after a forwarded SIGTERM/SIGINT before they are killed. */
  stopTimeoutMs: number;
}

/** Run the primary until it is told to stop; exits the process. */
export async function runPrimary(options: PrimaryOptions): Promise<void> {
  const { logger } = options;
  const port = options.port === 0 ? await freePort(options.host) : options.port;
  const env = { [WORKER_PORT_ENV]: String(port), [WORKER_CURSOR_SECRET_ENV]: randomBytes(32).toString('hex') };
  const listening = new Map<Worker, string>();
  const slots = new Map<Worker, number>();
  /** Workers whose process has not exited (cluster.workers may list one until its IPC closes too). */
  const live = new Set<Worker>();
  const backoff = new RestartBackoff();
  let started = false;
  let stopping = false;

  const fork = (slot: number): void => {
    const worker = cluster.fork({ ...env, [WORKER_ID_ENV]: String(slot) });
    live.add(worker);
    slots.set(worker, slot);
    logger.info({ worker: worker.id, slot, pid: worker.process.pid }, 'worker started');
    worker.on('message', (message: unknown) => {
      if (!isListening(message)) return;
      listening.set(worker, message.url);
      if (!started && listening.size === options.workers) {
        started = true;
        process.stderr.write(`rcp-gateway listening on ${message.url} (${options.workers} workers)\n`);
      }
    });
  };

  cluster.on('exit', (worker, code, signal) => {
    live.delete(worker);
    const wasListening = listening.delete(worker);
    const slot = slots.get(worker) ?? 1;
    slots.delete(worker);
    if (stopping) {
      if (live.size === 0) process.exit();
      return;
    }
    if (!started && !wasListening) {
      // It never listened: a config, engine or port problem another fork would hit again.
      process.stderr.write(`rcp-gateway: worker exited (${signal ?? `code ${code}`}) before listening; stopping\n`);
      process.exitCode = typeof code === 'number' && code !== 0 ? code : 1;
      stopAll('SIGTERM');
      return;
    }
    const delay = backoff.next();
    logger.warn({ worker: worker.id, pid: worker.process.pid, code, signal, restartInMs: delay }, 'worker exited unexpectedly; restarting');
    setTimeout(() => {
      if (!stopping) fork(slot);
    }, delay);
  });

  const stopAll = (signal: NodeJS.Signals): void => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'stopping workers');
    stopWorkers(live, signal, options.stopTimeoutMs);
  };
  process.on('SIGTERM', () => stopAll('SIGTERM'));
  process.on('SIGINT', () => stopAll('SIGINT'));
  // SIGHUP reloads config in every worker (each re-reads the file itself).
  process.on('SIGHUP', () => {
    for (const worker of live) worker.process.kill('SIGHUP');
  });

  // One /metrics for the process: a scrape on any worker merges every listening worker's registry.
  serveClusterMetrics(() => listening.keys());
  for (let slot = 1; slot <= options.workers; slot++) fork(slot);
}

/** Restart delay for a worker that died: doubles with each unexpected exit within CRASH_WINDOW_MS. */
class RestartBackoff {
  private readonly recent: number[] = [];

  next(now = Date.now()): number {
    this.recent.push(now);
    while (this.recent.length > 0 && this.recent[0]! < now - CRASH_WINDOW_MS) this.recent.shift();
    return Math.min(RESTART_CAP_MS, RESTART_BASE_MS * 2 ** (this.recent.length - 1));
  }
}

/** Forward `signal` to every live worker; kill what is left after `timeoutMs`; the primary exits. */
function stopWorkers(live: ReadonlySet<Worker>, signal: NodeJS.Signals, timeoutMs: number): void {
  if (live.size === 0) process.exit();
  for (const worker of live) worker.process.kill(signal);
  setTimeout(() => {
    for (const worker of live) worker.process.kill('SIGKILL');
    process.exit(1);
  }, timeoutMs).unref();
}

function isListening(message: unknown): message is { type: string; url: string } {
  return (
    typeof message === 'object' &&
    message !== null &&
    (message as { type?: unknown }).type === LISTENING &&
    typeof (message as { url?: unknown }).url === 'string'
  );
}
