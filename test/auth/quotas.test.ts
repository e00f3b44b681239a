/**
 * Per-principal quotas against a real gateway process (in-process store): the request-rate
 * token bucket (429 + Retry-After, -32011 with retryAfterMs), the cap on requests in flight
 * (-32011), per-IP quotas for anonymous access, and the refusal to serve a non-loopback
 * address with auth off.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { rpc, rpcRaw } from '../support/http-client.js';
import {
  GATEWAY_CLI,
  spawnCaptured,
  tmpDir,
  waitForEvent,
  writeConfig,
  type EngineHandle,
  type GatewayHandle,
} from '../support/processes.js';
import { suiteProcesses } from '../support/suite.js';
import { keyHash } from './support.js';

const procs = suiteProcesses();
const KEYS = {
  limited: 'limited-key-5a4b3c2d1e0f',
  other: 'other-key-0f1e2d3c4b5a',
  slow: 'slow-key-1a2b3c4d5e6f',
  base: 'base-key-6f5e4d3c2b1a',
};
const as = (who: keyof typeof KEYS): { headers: Record<string, string> } => ({ headers: { authorization: `Bearer ${KEYS[who]}` } });

let slowEngine: EngineHandle;
let gw: GatewayHandle;

beforeAll(async () => {
  const web = await procs.engine(['--id', 'web']);
  slowEngine = await procs.engine(['--id', 'slow', '--fault', 'slow', '--delay-ms', '1500']);
  gw = await procs.gateway({
    engines: [
      { id: 'web', transport: 'http', url: web.url },
      { id: 'slow', transport: 'http', url: slowEngine.url },
    ],
    gateway: {
      logLevel: 'warn',
      auth: {
        enabled: true,
        apiKeys: [
          { id: 'limited', hash: keyHash(KEYS.limited), tenant: 'metered' },
          { id: 'other', hash: keyHash(KEYS.other), tenant: 'metered' },
          { id: 'slow', hash: keyHash(KEYS.slow), tenant: 'serial' },
          { id: 'base', hash: keyHash(KEYS.base), tenant: 'metered' },
        ],
      },
      tenants: {
        // Two requests, then one every 20 s: the third within the test is over quota.
        metered: { engines: ['web'], quota: { rate: { ratePerSec: 0.05, burst: 2 } } },
        serial: { engines: ['slow'], quota: { maxConcurrent: 1 } },
      },
    },
  });
});

describe('request rate', () => {
  it('answers 429 with Retry-After and -32011 retryAfterMs once a principal has spent its bucket, per principal', async () => {
    expect((await rpc(gw.url, 'ping', {}, as('limited'))).status).toBe(200);
    expect((await rpc(gw.url, 'ping', {}, as('limited'))).status).toBe(200);
    const over = await rpc(gw.url, 'ping', {}, as('limited'));
    expect(over.status).toBe(429);
    const retryAfter = Number(over.headers['retry-after']);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(20);
    expect(over.body).toMatchObject({ id: null, error: { code: -32011, data: { retryable: true } } });
    const retryAfterMs = (over.body as { error: { data: { retryAfterMs: number } } }).error.data.retryAfterMs;
    expect(retryAfterMs).toBeGreaterThan(0);
    expect(retryAfterMs).toBeLessThanOrEqual(20_000);
    // Another principal of the same tenant has its own bucket.
    expect((await rpc(gw.url, 'ping', {}, as('other'))).status).toBe(200);
  });
});

describe('request rate at the bare endpoint path', () => {
  it('takes one token per POST to the base path itself, as to a method path', async () => {
    // The guard sits on `<base>` and `<base>/*`, and the latter matches the base too: once per request all the same.
    const post = (): Promise<number> =>
      rpcRaw(gw.url, JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping', params: {} }), as('base').headers).then((r) => r.status);
    expect(await post()).toBe(200);
    expect(await post()).toBe(200); // burst 2
    expect(await post()).toBe(429);
  });
});

describe('requests in flight', () => {
  it('answers -32011 with retryAfterMs past the principal concurrency cap, and serves again once it is free', async () => {
    const first = rpc(gw.url, 'retrieve', { query: 'graph', k: 1 }, as('slow'));
    await waitForEvent(slowEngine.eventsFile, (e) => e.ev === 'request' && e.method === 'retrieve');
    const second = await rpc(gw.url, 'retrieve', { query: 'graph', k: 1 }, as('slow'));
    expect(second.error).toMatchObject({ code: -32011, data: { retryable: true, retryAfterMs: 250 } });
    expect((await first).result).toBeDefined();
    const third = await rpc(gw.url, 'ping', {}, as('slow'));
    expect(third.result).toEqual({});
  });
});

describe('anonymous access', () => {
  it('is limited per client address when auth is off', async () => {
    const web = await procs.engine(['--id', 'web']);
    const open = await procs.gateway({
      engines: [{ id: 'web', transport: 'http', url: web.url }],
      gateway: { logLevel: 'warn', quotas: { anonymousPerIp: { rate: { ratePerSec: 0.05, burst: 1 } } } },
    });
    expect((await rpc(open.url, 'ping')).status).toBe(200);
    const over = await rpc(open.url, 'ping');
    expect(over.status).toBe(429);
    expect(over.body).toMatchObject({ error: { code: -32011 } });
  });
});

describe('binding', () => {
  const config = (): string =>
    writeConfig(tmpDir(), { engines: [{ id: 'web', transport: 'http', url: 'http://127.0.0.1:9/rcp' }], gateway: { logLevel: 'warn' } });

  it('refuses a non-loopback address with auth off', async () => {
    const { proc, out } = spawnCaptured(
      process.execPath,
      [GATEWAY_CLI, 'serve', '--config', config(), '--host', '0.0.0.0', '--port', '0'],
      {},
    );
    const code = await new Promise<number | null>((resolve) => proc.once('exit', resolve));
    expect(code).toBe(2);
    expect(out.stderr).toContain('refusing to serve on 0.0.0.0 with client authentication off');
  });

  it('serves there when explicitly allowed', async () => {
    const allowed = await procs.gateway(
      { engines: [{ id: 'web', transport: 'http', url: 'http://127.0.0.1:9/rcp' }], gateway: { logLevel: 'warn', host: '0.0.0.0' } },
      { args: ['--allow-unauthenticated'] },
    );
    expect(allowed.url).toMatch(/^http:\/\//);
  });
});
