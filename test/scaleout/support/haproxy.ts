/**
 * HAProxy (Debian's `haproxy` package) as the load balancer of the multi-replica suite, run on
 * the shipped deploy/haproxy/haproxy.cfg with addresses from the environment, in the foreground,
 * with its admin socket in a temp folder for reading server states and retry counters.
 */
import { spawn, spawnSync, type ChildProcessWithoutNullStreams } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import { REPO_ROOT, stopChild, tmpDir, trackChild } from '../../support/processes.js';
import { freePort } from './ports.js';

export const HAPROXY_CONFIG = path.join(REPO_ROOT, 'deploy/haproxy/haproxy.cfg');

/** One row of `show stat` (a frontend, a backend or a server). */
export type StatRow = Record<string, string>;

export function hasHaproxy(): boolean {
  return spawnSync('haproxy', ['-v'], { stdio: 'ignore' }).status === 0;
}

export interface Balancer {
  /** The frontend's base URL for RCP, e.g. `http://127.0.0.1:PORT/rcp`. */
  url: string;
  /** `show stat` rows of the `gateways` backend: its servers and the BACKEND row. */
  stats(): Promise<StatRow[]>;
  /** The status column of one server: UP, DOWN, `UP 1/2`, NOLB, MAINT, … */
  status(server: string): Promise<string>;
  stderr(): string;
  stop(): Promise<number | null>;
}

/** A command on the admin socket; the socket closes after answering one command. */
function adminCommand(socket: string, command: string): Promise<string> {
  return new Promise((resolve, reject) => {
    let answer = '';
    const connection = net.createConnection(socket, () => connection.end(`${command}\n`));
    connection.setEncoding('utf8');
    connection.on('data', (chunk: string) => {
      answer += chunk;
    });
    connection.on('end', () => resolve(answer));
    connection.on('error', reject);
  });
}

function parseCsv(text: string): StatRow[] {
  const [header, ...lines] = text.split('\n').filter((line) => line.trim() !== '');
  const columns = header!.replace(/^# /, '').split(',');
  return lines.map((line) => Object.fromEntries(line.split(',').map((value, i) => [columns[i]!, value])));
}

/** Start HAProxy in front of `replicas` (host:port each, in server order gw1, gw2, …). */
export async function startBalancer(replicas: readonly string[]): Promise<Balancer> {
  const dir = tmpDir('rcp-haproxy-');
  const socket = path.join(dir, 'admin.sock');
  const port = await freePort('127.0.0.1');
  const env: NodeJS.ProcessEnv = { ...process.env, RCPGW_LB_BIND: `127.0.0.1:${port}`, RCPGW_LB_ADMIN_SOCKET: socket };
  replicas.forEach((address, i) => {
    env[`RCPGW_REPLICA_${i + 1}`] = address;
  });
  const proc: ChildProcessWithoutNullStreams = spawn('haproxy', ['-db', '-f', HAPROXY_CONFIG], { env, stdio: ['pipe', 'pipe', 'pipe'] });
  trackChild(proc);
  let stderr = '';
  proc.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
  });
  proc.stdout.resume();
  const exited = new Promise<never>((_resolve, reject) =>
    proc.once('exit', (code) => reject(new Error(`haproxy exited (${code}):\n${stderr}`))),
  );

  const stats = async (): Promise<StatRow[]> =>
    parseCsv(await adminCommand(socket, 'show stat')).filter((row) => row.pxname === 'gateways');
  // Ready once the admin socket answers (the frontend is bound before the socket is served).
  const deadline = Date.now() + 10_000;
  for (;;) {
    const answered = await Promise.race([
      stats().then(
        () => true,
        () => false,
      ),
      exited,
    ]);
    if (answered) break;
    if (Date.now() > deadline) throw new Error(`haproxy did not open its admin socket:\n${stderr}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  exited.catch(() => undefined);
  return {
    url: `http://127.0.0.1:${port}/rcp`,
    stats,
    status: async (server) => (await stats()).find((row) => row.svname === server)?.status ?? 'missing',
    stderr: () => stderr,
    stop: () => stopChild(proc),
  };
}
