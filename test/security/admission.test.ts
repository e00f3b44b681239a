/**
 * Admission against a hostile client, through a real gateway process: slow request bodies no
 * longer hold admission slots and are cut by a body read timeout (408), connections per client
 * address are capped, the condition shows in /metrics; batches are capped in size and each member
 * counts against the in-flight cap.
 */
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GatewayHandle } from '../support/processes.js';
import {
  gatewayOver,
  hostileEngine,
  post,
  rawRequest,
  retrieveMessage,
  stalledBody,
  untilClosed,
  type HostileEngine,
  type Json,
} from './support.js';

const engines: HostileEngine[] = [];
const gateways: GatewayHandle[] = [];

afterAll(async () => {
  for (const gw of gateways) expect(await gw.stop()).toBe(0);
  await Promise.all(engines.map((e) => e.close()));
});

/** Resolves with what the socket received if it closes within `ms`, else with undefined. */
function closedWithin(socket: net.Socket, ms: number): Promise<string | undefined> {
  return Promise.race([untilClosed(socket), new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), ms).unref())]);
}

function metricsUrl(gw: GatewayHandle): string {
  return `${new URL(gw.url).origin}/metrics`;
}

function metricValue(text: string, name: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line === undefined ? undefined : Number(line.split(' ')[1]);
}

describe('slow request bodies', () => {
  let gw: GatewayHandle;
  beforeAll(async () => {
    const engine = await hostileEngine(() => ({ hits: [{ id: 'a', score: 1 }] }));
    engines.push(engine);
    gw = await gatewayOver([engine.url], { maxInFlight: 2, bodyTimeoutMs: 1_500, headersTimeoutMs: 1_500, maxConnectionsPerIp: 6 });
    gateways.push(gw);
  });

  it('do not take admission slots: with maxInFlight stalled bodies open, other clients are still served', async () => {
    const stalled = [await stalledBody(gw.url), await stalledBody(gw.url)];
    try {
      const res = await post(gw.url, retrieveMessage(1));
      expect(res.status).toBe(200);
      expect((res.json() as Json).result).toMatchObject({ hits: [{ id: 'a' }] });
      // Visible in metrics while they last.
      const metrics = await rawRequest(metricsUrl(gw), { method: 'GET', headers: {} });
      expect(metricValue(metrics.text, 'rcpgw_http_bodies_reading')).toBe(2);
      // Cut by the body read timeout: 408 and the connection closed.
      const cut = await Promise.all(stalled.map((s) => closedWithin(s, 10_000)));
      for (const text of cut) expect(text).toMatch(/^HTTP\/1\.1 408/);
      const after = await rawRequest(metricsUrl(gw), { method: 'GET', headers: {} });
      expect(metricValue(after.text, 'rcpgw_http_body_timeouts_total')).toBe(2);
    } finally {
      for (const s of stalled) s.destroy();
    }
  });

  it('a client that never finishes its headers is cut by the header timeout', async () => {
    const url = new URL(gw.url);
    const socket = net.connect(Number(url.port), url.hostname);
    socket.on('error', () => undefined);
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
    socket.write(`POST ${url.pathname} HTTP/1.1\r\nHost: x\r\n`);
    expect(await closedWithin(socket, 10_000)).toBeDefined();
  });

  it('caps connections per client address; the excess is closed at once', async () => {
    const url = new URL(gw.url);
    const open = async (): Promise<net.Socket> => {
      const socket = net.connect(Number(url.port), url.hostname);
      socket.on('error', () => undefined);
      await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
      return socket;
    };
    const sockets: net.Socket[] = [];
    try {
      for (let i = 0; i < 6; i++) sockets.push(await open());
      const excess = await open();
      sockets.push(excess);
      expect(await closedWithin(excess, 3_000)).toBeDefined();
      expect(await closedWithin(sockets[0]!, 200)).toBeUndefined();
      const metrics = await rawRequest(metricsUrl(gw), { method: 'GET', headers: {} }).catch(() => undefined);
      expect(metrics).toBeUndefined(); // still at the cap: this very scrape is refused too
    } finally {
      for (const s of sockets) s.destroy();
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
    const metrics = await rawRequest(metricsUrl(gw), { method: 'GET', headers: {} });
    expect(metricValue(metrics.text, 'rcpgw_http_connections_refused_total')).toBeGreaterThanOrEqual(2);
  });
});

describe('batches', () => {
  let gw: GatewayHandle;
  let engine: HostileEngine;
  let release: () => void = () => undefined;
  let held = new Promise<void>((resolve) => (release = resolve));
  beforeAll(async () => {
    engine = await hostileEngine(async (call) => {
      if ((call.params.query as string) === 'hold') await held;
      return { hits: [{ id: 'a', score: 1 }] };
    });
    engines.push(engine);
    gw = await gatewayOver([engine.url], { maxInFlight: 4, maxBatchSize: 50 });
    gateways.push(gw);
  });

  it('an oversized batch is refused whole (413, -32013) before any engine call', async () => {
    const before = engine.callsOf('retrieve').length;
    const batch = Array.from({ length: 51 }, (_, i) => retrieveMessage(i));
    const res = await post(gw.url, batch);
    expect(res.status).toBe(413);
    expect(res.json()).toMatchObject({ id: null, error: { code: -32013, message: expect.stringMatching(/batch/) } });
    expect(engine.callsOf('retrieve').length).toBe(before);
  });

  it('each member counts against maxInFlight', async () => {
    const batch = Array.from({ length: 4 }, (_, i) => retrieveMessage(i, { query: 'hold', k: 1 }));
    const answers = post(gw.url, batch);
    const deadline = Date.now() + 5_000;
    while (engine.callsOf('retrieve').filter((c) => c.params.query === 'hold').length < 4 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    const shed = await post(gw.url, { jsonrpc: '2.0', id: 'p', method: 'ping', params: {} });
    expect(shed.status).toBe(429);
    release();
    const done = await answers;
    expect((done.json() as Json[]).map((a) => a.result !== undefined)).toEqual([true, true, true, true]);
    held = Promise.resolve();
    expect((await post(gw.url, { jsonrpc: '2.0', id: 'p2', method: 'ping', params: {} })).status).toBe(200);
  });

  it('a batch larger than maxInFlight could never be admitted: refused whole (413), never half-run', async () => {
    const before = engine.callsOf('retrieve').length;
    const res = await post(
      gw.url,
      Array.from({ length: 5 }, (_, i) => retrieveMessage(i)),
    );
    expect(res.status).toBe(413);
    expect(res.json()).toMatchObject({ error: { code: -32013 } });
    expect(engine.callsOf('retrieve').length).toBe(before);
  });
});
