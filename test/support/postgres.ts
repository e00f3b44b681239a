/**
 * A throwaway PostgreSQL server for tests: Debian's binaries (/usr/lib/postgresql/<v>/bin),
 * a cluster in a temporary folder, listening on a free loopback port, trust authentication.
 * PostgreSQL refuses to run as root, so as root the cluster belongs to the `postgres` system
 * user and every binary runs through `runuser`. `postgresBinaries()` is undefined when the
 * package is not installed, so suites can skip visibly.
 */
import { execFile } from 'node:child_process';
import { chownSync, existsSync, readFileSync, readdirSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';
import { tmpDir } from './processes.js';

const run = promisify(execFile);

export function postgresBinaries(): string | undefined {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root)
    .filter((v) => /^\d+$/.test(v))
    .sort((a, b) => Number(b) - Number(a));
  const dir = versions
    .map((v) => path.join(root, v, 'bin'))
    .find((bin) => existsSync(path.join(bin, 'pg_ctl')) && existsSync(path.join(bin, 'initdb')));
  if (!dir) return undefined;
  // As root the cluster must belong to another user: the package's `postgres` user.
  if (process.getuid?.() === 0 && !userExists('postgres')) return undefined;
  return dir;
}

function passwdLine(name: string): string[] | undefined {
  const passwd = existsSync('/etc/passwd') ? readFileSync('/etc/passwd', 'utf8') : '';
  return passwd
    .split('\n')
    .find((line) => line.startsWith(`${name}:`))
    ?.split(':');
}

function userExists(name: string): boolean {
  return passwdLine(name) !== undefined;
}

export interface PostgresServer {
  url: string;
  port: number;
  /** Run SQL through psql as the superuser. */
  psql(sql: string): Promise<string>;
  /** Stop the server (a no-op when it is not running). */
  stop(mode?: 'fast' | 'immediate'): Promise<void>;
  start(): Promise<void>;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

export async function startPostgres(bin: string): Promise<PostgresServer> {
  const dir = tmpDir('rcp-pg-');
  const data = path.join(dir, 'data');
  const asRoot = process.getuid?.() === 0;
  if (asRoot) {
    const { uid, gid } = postgresIds();
    chownSync(dir, uid, gid);
  }
  const as = async (program: string, args: string[]): Promise<string> => {
    const full = path.join(bin, program);
    const { stdout } = asRoot
      ? await run('runuser', ['-u', 'postgres', '--', full, ...args], { cwd: dir })
      : await run(full, args, { cwd: dir });
    return stdout;
  };
  await as('initdb', ['-D', data, '-U', 'postgres', '--auth=trust', '--no-sync', '-E', 'UTF8', '--locale=C']);
  const port = await freePort();
  const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off`;
  let running = false;
  const start = async (): Promise<void> => {
    await as('pg_ctl', ['-D', data, '-o', options, '-l', path.join(dir, 'server.log'), '-w', '-t', '60', 'start']);
    running = true;
  };
  await start();
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  return {
    url,
    port,
    psql: (sql) =>
      as('psql', [
        '-h',
        '127.0.0.1',
        '-p',
        String(port),
        '-U',
        'postgres',
        '-d',
        'postgres',
        '-v',
        'ON_ERROR_STOP=1',
        '-q',
        '-A',
        '-t',
        '-c',
        sql,
      ]),
    stop: async (mode = 'fast') => {
      if (!running) return;
      running = false;
      await as('pg_ctl', ['-D', data, '-m', mode, '-w', '-t', '60', 'stop']);
    },
    start,
  };
}

function postgresIds(): { uid: number; gid: number } {
  const parts = passwdLine('postgres') ?? [];
  return { uid: Number(parts[2]), gid: Number(parts[3]) };
}
