/**
 * Load shedding, deadlines and retries through the running gateway: the gateway-wide in-flight
 * cap (HTTP 429 + Retry-After before JSON-RPC; -32011 with `retryAfterMs` over stdio), the
 * per-engine bounded queue (a full queue skips the engine for that call, noted; a queued call
 * never outlives its deadline), the overall deadline min(config, `_meta.deadlineMs`), and
 * retries — reads only, retryable codes only, once per leg, within the deadline, honouring
 * `retryAfterMs`, capped by the gateway-wide budget.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { StdioClient } from '../support/stdio-client.js';
import {
  GATEWAY_CLI,
  REPO_ROOT,
  readEvents,
  startGateway,
  startHttpEngine,
  tmpDir,
  waitForEvent,
  writeConfig,
  type EngineHandle,
  type GatewayHandle,
} from '../support/processes.js';
import { emittedErrors, schemaCrossCheck, schemaCrossCheckBanner } from '../support/spec-validator.js';
import { expectHealthyAnswer, notesOf, QUERY, requestsSeen, retrieve, type RetrieveResult } from './helpers.js';

const engines: EngineHandle[] = [];
const gateways: GatewayHandle[] = [];
let ok: EngineHandle;

async function engine(args: string[]): Promise<EngineHandle> {
  const handle = await startHttpEngine(args);
  engines.push(handle);
  return handle;
}

async function gatewayWith(config: unknown): Promise<GatewayHandle> {
  const handle = await startGateway({ config });
  gateways.push(handle);
  return handle;
}

beforeAll(async () => {
  ok = await engine(['--id', 'ok', '--id-prefix', 'ok-']);
});

afterAll(async () => {
  for (const gw of gateways) expect(await gw.stop()).toBe(0);
  await Promise.all(engines.map((e) => e.stop()));
  console.log(schemaCrossCheckBanner());
  expect(emittedErrors()).toEqual([]);
});

const waitForRequests = (file: string, n: number): Promise<unknown> =>
  waitForEvent(file, () => readEvents(file).filter((e) => e.ev === 'request' && e.method === 'retrieve').length >= n);

describe('gateway-wide in-flight cap', () => {
  let hang: EngineHandle;
  let configFile: string;
  let gw: GatewayHandle;
  beforeAll(async () => {
    hang = await engine(['--id', 'hang', '--fault', 'hang']);
    configFile = writeConfig(tmpDir('rcp-cap-'), {
      engines: [
        { id: 'ok', transport: 'http', url: ok.url },
        { id: 'hang', transport: 'http', url: hang.url },
      ],
      gateway: { maxInFlight: 2, deadlineMs: 5_000, logLevel: 'warn' },
    });
    gw = await startGateway({ configFile });
    gateways.push(gw);
  });

  it('over HTTP: beyond the cap, 429 with Retry-After and -32011 with retryAfterMs, before JSON-RPC', async () => {
    const before = requestsSeen(hang.eventsFile);
    const busy = [1, 2].map(() => retrieve(gw.url, { deadlineMs: 1_500, engines: ['hang'] }));
    await waitForRequests(hang.eventsFile, before + 2);
    const shed = await retrieve(gw.url, { engines: ['ok'] });
    expect(shed.status).toBe(429);
    expect(Number(shed.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(shed.error).toMatchObject({ code: -32011, data: { retryable: true, retryAfterMs: expect.any(Number) } });
    expect(shed.id).toBeNull(); // the JSON-RPC layer never saw the request
    for (const res of await Promise.all(busy)) expect(res.error).toMatchObject({ code: -32014, data: { deadlineMs: 1_500 } });
    // Capacity is back once they are answered.
    expectHealthyAnswer(await retrieve(gw.url, { engines: ['ok'] }), 5_000, 'ok');
  });

  it('over stdio: beyond the cap, a JSON-RPC -32011 with retryAfterMs; the others are still answered', async () => {
    const client = new StdioClient([process.execPath, GATEWAY_CLI, 'stdio', '--config', configFile], { cwd: REPO_ROOT });
    try {
      expect((await client.request('initialize', { protocolVersion: 1 })).result).toBeDefined();
      const before = requestsSeen(hang.eventsFile);
      const params = { query: QUERY, k: 3, _meta: { deadlineMs: 1_500, 'x-rcpgw': { engines: ['hang'] } } };
      const busy = [client.request('retrieve', params), client.request('retrieve', params)];
      await waitForRequests(hang.eventsFile, before + 2);
      const shed = await client.request('retrieve', { query: QUERY, k: 3 });
      expect(shed.error).toMatchObject({ code: -32011, data: { retryable: true, retryAfterMs: expect.any(Number) } });
      for (const res of await Promise.all(busy)) expect(res.error?.code).toBe(-32014);
      const after = await client.request<RetrieveResult>('retrieve', { query: QUERY, k: 3, _meta: { 'x-rcpgw': { engines: ['ok'] } } });
      expect(after.result?.hits.length).toBeGreaterThan(0);
    } finally {
      expect(await client.close()).toBe(0);
      expect(client.violations).toEqual([]);
    }
  });
});

describe('per-engine limiter and deadlines', () => {
  let slow: EngineHandle;
  let hang: EngineHandle;
  let gw: GatewayHandle;
  beforeAll(async () => {
    [slow, hang] = await Promise.all([
      engine(['--id', 'slowq', '--fault', 'slow', '--delay-ms', '800']),
      engine(['--id', 'hangq', '--fault', 'hang']),
    ]);
    gw = await gatewayWith({
      engines: [
        { id: 'ok', transport: 'http', url: ok.url },
        { id: 'slowq', transport: 'http', url: slow.url, maxConcurrent: 1, maxQueue: 0 },
        { id: 'hangq', transport: 'http', url: hang.url, maxConcurrent: 1, maxQueue: 4 },
      ],
      gateway: { deadlineMs: 2_000, logLevel: 'warn', retry: { budgetRatio: 0, minPerWindow: 0, windowMs: 10_000 } },
    });
  });

  it('a full queue skips the engine for that call, noted, instead of queueing', async () => {
    const [a, b] = await Promise.all([1, 2].map(() => retrieve(gw.url, { engines: ['ok', 'slowq'] })));
    const results = [a!, b!].map((res) => expectHealthyAnswer(res, 2_000, 'ok'));
    const shed = results.filter((r) =>
      r._meta.degraded?.some((d) => d.engine === 'slowq' && d.reason === 'queue-full' && d.code === -32011),
    );
    expect(shed).toHaveLength(1);
    expect(notesOf(shed[0]!)).toContain('engine slowq dropped: queue-full (-32011)');
    expect(results.filter((r) => r.hits.some((h) => h.meta.engine === 'slowq'))).toHaveLength(1);
    expect(requestsSeen(slow.eventsFile)).toBe(1);
  });

  it('a call waiting in the queue is dropped at its deadline, not when a slot frees', async () => {
    const occupying = retrieve(gw.url, { deadlineMs: 1_000, engines: ['ok', 'hangq'] });
    await waitForRequests(hang.eventsFile, 1);
    const queued = expectHealthyAnswer(await retrieve(gw.url, { deadlineMs: 300, engines: ['ok', 'hangq'] }), 300, 'ok');
    expect(queued._meta.degraded).toEqual([expect.objectContaining({ engine: 'hangq', reason: 'timeout', code: -32014 })]);
    expect(queued._meta.degraded![0]!.detail).toMatch(/queued/);
    expect(requestsSeen(hang.eventsFile)).toBe(1); // never sent
    const first = expectHealthyAnswer(await occupying, 1_000, 'ok');
    expect(first._meta.degraded).toEqual([expect.objectContaining({ engine: 'hangq', reason: 'timeout' })]);
  });

  it('the overall deadline is min(config, _meta.deadlineMs), forwarded strictly smaller', async () => {
    expectHealthyAnswer(await retrieve(gw.url, { deadlineMs: 500, engines: ['ok'] }), 500, 'ok');
    expectHealthyAnswer(await retrieve(gw.url, { deadlineMs: 60_000, engines: ['ok'] }), 2_000, 'ok');
    const forwarded = readEvents(ok.eventsFile)
      .filter((e) => e.ev === 'request' && e.method === 'retrieve')
      .slice(-2)
      .map((e) => (e.params as { _meta: { deadlineMs: number } })._meta.deadlineMs);
    expect(forwarded[0]).toBeLessThan(500);
    expect(forwarded[1]).toBeLessThan(2_000);
  });
});

describe('retries with a budget', () => {
  let failing: EngineHandle;
  let invalid: EngineHandle;
  let limited: EngineHandle;
  let gw: GatewayHandle;
  beforeAll(async () => {
    [failing, invalid, limited] = await Promise.all([
      engine(['--id', 'failing', '--fault', 'fail', '--fail-code', '-32603']),
      engine(['--id', 'invalid', '--fault', 'fail', '--fail-code', '-32602']),
      engine(['--id', 'limited', '--fault', 'rate-limit', '--retry-after-ms', '5000']),
    ]);
    gw = await gatewayWith({
      engines: [
        { id: 'ok', transport: 'http', url: ok.url },
        { id: 'failing', transport: 'http', url: failing.url },
        { id: 'invalid', transport: 'http', url: invalid.url },
        { id: 'limited', transport: 'http', url: limited.url },
      ],
      gateway: {
        deadlineMs: 2_000,
        logLevel: 'warn',
        breaker: { volumeThreshold: 1_000 },
        retry: { budgetRatio: 0, minPerWindow: 2, windowMs: 60_000, backoffMs: 10 },
      },
    });
  });

  it('retries a retryable failure once', async () => {
    const result = expectHealthyAnswer(await retrieve(gw.url, { engines: ['ok', 'failing'] }), 2_000, 'ok');
    expect(requestsSeen(failing.eventsFile)).toBe(2);
    expect(notesOf(result)).toMatch(/engine failing: retried once after -32603/);
    expect(result._meta.degraded).toEqual([expect.objectContaining({ engine: 'failing', code: -32603 })]);
  });

  it("never retries the caller's own error", async () => {
    const result = expectHealthyAnswer(await retrieve(gw.url, { engines: ['ok', 'invalid'] }), 2_000, 'ok');
    expect(requestsSeen(invalid.eventsFile)).toBe(1);
    expect(notesOf(result)).not.toMatch(/retried/);
    expect(result._meta.degraded).toEqual([expect.objectContaining({ engine: 'invalid', code: -32602 })]);
  });

  it('does not retry when the engine asks to wait longer than the deadline leaves', async () => {
    const result = expectHealthyAnswer(await retrieve(gw.url, { engines: ['ok', 'limited'] }), 2_000, 'ok');
    expect(requestsSeen(limited.eventsFile)).toBe(1);
    expect(notesOf(result)).toMatch(/engine limited: not retried after -32011: no time left before the deadline/);
  });

  it('stops retrying once the gateway-wide budget is spent', async () => {
    const notes: string[] = [];
    for (let i = 0; i < 3; i++)
      notes.push(notesOf(expectHealthyAnswer(await retrieve(gw.url, { engines: ['ok', 'failing'] }), 2_000, 'ok')));
    // Budget: 2 retries per window; the first test used one. So 3 more calls → 1 retry.
    expect(requestsSeen(failing.eventsFile)).toBe(2 + 3 + 1);
    expect(notes.filter((n) => /retried once/.test(n))).toHaveLength(1);
    expect(notes.filter((n) => /retry budget exhausted/.test(n))).toHaveLength(2);
  });
});

schemaCrossCheck();
