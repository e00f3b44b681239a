/**
 * The console's HTTP surface on a real gateway process: off by default; when on, the page, its
 * assets (and nothing else by name), the JSON snapshot, the live stream that runs the sampler
 * only while someone watches, the explorer's search stream, and the loopback-only guard.
 */
import { keyHash } from '../auth/support.js';
import { until } from '../observability/support.js';
import { request } from 'node:http';
import os from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, stdioEngineCommand, type GatewayHandle } from '../support/processes.js';
import { MAX_CONSOLE_STREAMS } from '../../src/node/console/console.js';

let on: GatewayHandle;
let off: GatewayHandle;
/** Client auth on (an API key), console on. */
let authed: GatewayHandle;
/** The console URL by loopback address (the "on" gateway listens on every interface). */
const consoleOf = (gateway: GatewayHandle): string => `http://127.0.0.1:${new URL(gateway.url).port}/console`;

beforeAll(async () => {
  const engines = [
    { id: 'one', transport: 'stdio', command: stdioEngineCommand(['--id', 'one', '--id-prefix', 'one-']) },
    { id: 'two', transport: 'stdio', command: stdioEngineCommand(['--id', 'two', '--id-prefix', 'two-']) },
  ];
  const apiKeys = [{ id: 'alice', hash: keyHash('alice-key-0123456789') }];
  [on, off, authed] = await Promise.all([
    startGateway({ config: { engines, gateway: { host: '0.0.0.0', auth: { allowUnauthenticated: true }, console: { enabled: true } } } }),
    startGateway({ config: { engines } }),
    startGateway({ config: { engines, gateway: { auth: { enabled: true, apiKeys }, console: { enabled: true } } } }),
  ]);
}, 60_000);
afterAll(async () => {
  await Promise.all([on?.stop(), off?.stop(), authed?.stop()]);
});

describe('console with client auth on', () => {
  it('shows state but refuses explorer searches (-32012): they would skip the tenant scope, the quota and the audit', async () => {
    expect((await fetch(`${consoleOf(authed)}/api/state`)).status).toBe(200);
    const events = await readEvents(`${consoleOf(authed)}/api/search?q=boundary`, (seen) => seen.length > 0);
    expect(events).toEqual([['failure', expect.objectContaining({ code: -32012 })]]);
  });
});

interface Frame {
  state: {
    gateway: { watched: boolean };
    engines: Array<{ id: string; status: string; breaker: { state: string }; totals: { calls: number; failedCalls: number } }>;
  };
  experiments: unknown;
}

/** Read Server-Sent Events from `url` until `until` says stop; returns them as [event, data]. */
async function readEvents(url: string, until: (events: Array<[string, unknown]>) => boolean): Promise<Array<[string, unknown]>> {
  const controller = new AbortController();
  const res = await fetch(url, { signal: controller.signal });
  expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
  const events: Array<[string, unknown]> = [];
  const decoder = new TextDecoder();
  let buffer = '';
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    buffer += decoder.decode(chunk, { stream: true });
    let end: number;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const event = /^event: (.*)$/m.exec(block)?.[1] ?? 'message';
      events.push([event, JSON.parse(/^data: (.*)$/m.exec(block)?.[1] ?? 'null')]);
    }
    if (until(events)) break;
  }
  controller.abort();
  return events;
}

describe('console off (the default)', () => {
  it('is not served at all', async () => {
    for (const path of ['', '/', '/api/state', '/assets/console.js']) expect((await fetch(`${consoleOf(off)}${path}`)).status).toBe(404);
  });
});

describe('console on', () => {
  it('serves the page and its listed assets, with a content security policy, and no other name', async () => {
    const page = await fetch(consoleOf(on));
    expect(page.status).toBe(200);
    expect(page.headers.get('content-security-policy')).toContain("default-src 'self'");
    expect(await page.text()).toContain('Search explorer');
    for (const name of ['console.js', 'explorer.js', 'console.css', 'uPlot.js', 'uPlot.css']) {
      expect((await fetch(`${consoleOf(on)}/assets/${name}`)).status).toBe(200);
    }
    for (const name of ['index.ts', '..%2Fpackage.json', 'console.ts'])
      expect((await fetch(`${consoleOf(on)}/assets/${name}`)).status).toBe(404);
  });

  it('answers a snapshot with every engine, without running the sampler', async () => {
    const res = await fetch(`${consoleOf(on)}/api/state`);
    expect(res.headers.get('cache-control')).toBe('no-store');
    const frame = (await res.json()) as Frame;
    expect(frame.state.engines.map((e) => [e.id, e.status, e.breaker.state])).toEqual([
      ['one', 'ready', 'closed'],
      ['two', 'ready', 'closed'],
    ]);
    expect(frame.state.gateway.watched).toBe(false);
    expect(frame.experiments).toBeNull();
  });

  it('samples every second while a stream is open, and stops when it closes', async () => {
    const events = await readEvents(`${consoleOf(on)}/api/stream`, (seen) => seen.filter(([name]) => name === 'state').length >= 3);
    expect(events[0]![0]).toBe('history');
    const states = events.filter(([name]) => name === 'state').map(([, data]) => data as Frame);
    expect(states.some((frame) => frame.state.gateway.watched)).toBe(true);
    // The stream is gone: the next snapshot finds the sampler stopped.
    let watched = true;
    for (let attempt = 0; attempt < 50 && watched; attempt++) {
      watched = ((await (await fetch(`${consoleOf(on)}/api/state`)).json()) as Frame).state.gateway.watched;
    }
    expect(watched).toBe(false);
  });

  it('streams an explorer search: start, then the result with lineage', async () => {
    const events = await readEvents(`${consoleOf(on)}/api/search?q=retrieval+ranking&k=3`, (seen) =>
      seen.some(([n]) => n === 'result' || n === 'failure'),
    );
    expect(events[0]![0]).toBe('start');
    const [name, result] = events[events.length - 1]! as [string, { hits: unknown[]; lineage: { lists: Array<{ engine: string }> } }];
    expect(name).toBe('result');
    expect(result.hits).toHaveLength(3);
    expect(result.lineage.lists.map((l) => l.engine)).toEqual(['one', 'two']);
  });

  it('counts as /metrics does: the same engine call totals', async () => {
    const metrics = await (await fetch(on.url.replace(/\/rcp$/, '/metrics').replace('0.0.0.0', '127.0.0.1'))).text();
    const state = ((await (await fetch(`${consoleOf(on)}/api/state`)).json()) as Frame).state;
    for (const engine of state.engines) {
      const exposed = [
        ...metrics.matchAll(new RegExp(`^rcpgw_engine_calls_total\\{engine="${engine.id}",code="([^"]+)"\\} (\\d+)$`, 'gm')),
      ];
      const calls = exposed.reduce((sum, m) => sum + Number(m[2]), 0);
      expect(calls).toBeGreaterThan(0); // the explorer search above reached every engine
      expect(engine.totals).toEqual({
        calls,
        failedCalls: calls - exposed.filter((m) => m[1] === '0').reduce((sum, m) => sum + Number(m[2]), 0),
      });
    }
  });

  it('answers a search it cannot read with a failure event', async () => {
    const events = await readEvents(`${consoleOf(on)}/api/search?q=`, (seen) => seen.length > 0);
    expect(events).toEqual([['failure', expect.objectContaining({ code: -32602 })]]);
  });

  it('refuses a loopback request that names another host (DNS rebinding) or comes cross-site', async () => {
    const { port } = new URL(on.url);
    const status = (headers: Record<string, string>): Promise<number> =>
      new Promise((resolve, reject) => {
        const req = request({ host: '127.0.0.1', port, path: '/console/api/state', headers }, (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        });
        req.on('error', reject);
        req.end();
      });
    expect(await status({ host: `127.0.0.1:${port}` })).toBe(200);
    expect(await status({ host: `localhost:${port}` })).toBe(200);
    expect(await status({ host: `rebound.example:${port}` })).toBe(403);
    expect(await status({ host: `127.0.0.1:${port}`, 'sec-fetch-site': 'cross-site' })).toBe(403);
    expect(await status({ host: `127.0.0.1:${port}`, 'sec-fetch-site': 'same-origin' })).toBe(200);
    // A page on another localhost port is "same-site" to a browser: refused, as is a foreign Origin.
    expect(await status({ host: `127.0.0.1:${port}`, 'sec-fetch-site': 'same-site' })).toBe(403);
    expect(await status({ host: `127.0.0.1:${port}`, origin: 'http://127.0.0.1:3000' })).toBe(403);
    expect(await status({ host: `127.0.0.1:${port}`, origin: `http://127.0.0.1:${port}` })).toBe(200);
  });

  it('answers HEAD on its streams with headers only: no watcher left behind, no search run', async () => {
    const callsNow = async (): Promise<number> =>
      ((await (await fetch(`${consoleOf(on)}/api/state`)).json()) as Frame).state.engines.reduce((sum, e) => sum + e.totals.calls, 0);
    const before = await callsNow();
    for (const path of ['/api/stream', '/api/search?q=boundary']) {
      for (let i = 0; i < 5; i++) {
        const res = await fetch(`${consoleOf(on)}${path}`, { method: 'HEAD' });
        expect(res.status).toBe(200);
        expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
      }
    }
    const state = ((await (await fetch(`${consoleOf(on)}/api/state`)).json()) as Frame).state;
    expect(state.gateway.watched).toBe(false);
    expect(await callsNow()).toBe(before);
  });

  it(`opens at most ${MAX_CONSOLE_STREAMS} streams at once (503 beyond), and one again once a stream closes`, async () => {
    const open = await Promise.all(
      Array.from({ length: MAX_CONSOLE_STREAMS }, async () => {
        const controller = new AbortController();
        const res = await fetch(`${consoleOf(on)}/api/stream`, { signal: controller.signal });
        expect(res.status).toBe(200);
        return controller;
      }),
    );
    const over = await fetch(`${consoleOf(on)}/api/stream`);
    expect(over.status).toBe(503);
    expect(over.headers.get('retry-after')).toBe('5');
    for (const controller of open) controller.abort();
    // The closed streams are counted off as the gateway sees their clients go: one is taken again.
    const again = await until('a stream to be taken again', async () => {
      const controller = new AbortController();
      const { status } = await fetch(`${consoleOf(on)}/api/stream`, { signal: controller.signal });
      controller.abort();
      return status === 503 ? undefined : status;
    });
    expect(again).toBe(200);
  });

  const external = Object.values(os.networkInterfaces())
    .flat()
    .find((i) => i && i.family === 'IPv4' && !i.internal)?.address;
  it.skipIf(!external)('refuses a client that is not on loopback (403), even with a forwarded header', async () => {
    const port = new URL(on.url).port;
    const direct = `http://${external}:${port}/console`;
    for (const path of ['', '/api/state', '/api/stream', '/api/search?q=x', '/assets/console.js']) {
      const res = await fetch(`${direct}${path}`, { headers: { 'x-forwarded-for': '127.0.0.1' } });
      expect(res.status).toBe(403);
    }
    expect((await fetch(`http://${external}:${port}/healthz`)).status).toBe(200);
  });
});
