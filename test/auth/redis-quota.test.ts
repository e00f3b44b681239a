/**
 * Quotas shared across replicas through a real Redis: two gateway processes draw on one bucket
 * per principal. Needs Debian's `redis-server` (.ci/run installs it); skipped, visibly, where it
 * is missing — quotas.test.ts covers the in-process store everywhere.
 */
import { execFileSync, type ChildProcessWithoutNullStreams } from 'node:child_process';
import net from 'node:net';
import { beforeAll, describe, expect, it } from 'vitest';
import { rpc } from '../support/http-client.js';
import { spawnCaptured, stopChild, waitForLine } from '../support/processes.js';
import { suiteProcesses } from '../support/suite.js';
import { keyHash } from './support.js';

const REDIS_SERVER = findRedisServer();
const procs = suiteProcesses();
const KEY = 'shared-key-6c5d4e3f2a1b';
const auth = { headers: { authorization: `Bearer ${KEY}` } };

function findRedisServer(): string | undefined {
  try {
    return execFileSync('sh', ['-c', 'command -v redis-server'], { encoding: 'utf8' }).trim() || undefined;
  } catch {
    return undefined;
  }
}

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

async function startRedis(bin: string): Promise<{ url: string; proc: ChildProcessWithoutNullStreams }> {
  const port = await freePort();
  const { proc, out } = spawnCaptured(bin, ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {});
  procs.defer(() => stopChild(proc));
  await waitForLine(proc, /Ready to accept connections/, out, 10_000, 'redis-server');
  return { url: `redis://127.0.0.1:${port}/0`, proc };
}

function gatewayConfig(engineUrl: string, redisUrl: string, burst: number): unknown {
  return {
    engines: [{ id: 'web', transport: 'http', url: engineUrl }],
    gateway: {
      logLevel: 'warn',
      auth: { enabled: true, apiKeys: [{ id: 'shared', hash: keyHash(KEY), tenant: 'metered' }] },
      // `burst` requests per window of burst / ratePerSec seconds (here ≥ 60 s: no refill during the test).
      tenants: { metered: { quota: { rate: { ratePerSec: burst / 60, burst } } } },
      quotas: { store: 'redis', redisUrl, redisPrefix: 'rcpgw-test' },
    },
  };
}

describe.skipIf(!REDIS_SERVER)('quotas shared through Redis (redis-server)', () => {
  let engineUrl: string;
  let redisUrl: string;
  beforeAll(async () => {
    redisUrl = (await startRedis(REDIS_SERVER!)).url;
    engineUrl = (await procs.engine(['--id', 'web'])).url;
  });

  it('two gateway processes spend one bucket per principal', async () => {
    const [a, b] = await Promise.all([
      procs.gateway(gatewayConfig(engineUrl, redisUrl, 3)),
      procs.gateway(gatewayConfig(engineUrl, redisUrl, 3)),
    ]);
    expect((await rpc(a.url, 'ping', {}, auth)).status).toBe(200);
    expect((await rpc(a.url, 'ping', {}, auth)).status).toBe(200);
    expect((await rpc(b.url, 'ping', {}, auth)).status).toBe(200);
    // Each replica alone has spent less than 3: only the shared count is over.
    const overOnB = await rpc(b.url, 'ping', {}, auth);
    expect(overOnB.status).toBe(429);
    expect(Number(overOnB.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(overOnB.body).toMatchObject({ error: { code: -32011, data: { retryable: true } } });
    expect((await rpc(a.url, 'ping', {}, auth)).status).toBe(429);
  });

  it('keeps limiting per replica while Redis is unreachable', async () => {
    const deadUrl = `redis://127.0.0.1:${await freePort()}/0`;
    const gw = await procs.gateway(gatewayConfig(engineUrl, deadUrl, 1));
    expect((await rpc(gw.url, 'ping', {}, auth)).status).toBe(200);
    expect((await rpc(gw.url, 'ping', {}, auth)).status).toBe(429);
    expect(gw.stderr()).toContain('quota store');
  });
});
