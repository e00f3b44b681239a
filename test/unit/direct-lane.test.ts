/**
 * The Node listener's direct lane (src/node/server/direct-lane.ts): plain JSON RCP posts are
 * answered without the Hono app when nothing but the endpoint would see them. Two real listeners
 * over loopback, one with the lane and one without (`directLane: false`), get the same raw
 * requests; every answer must match in status, body and the headers a client acts on. The lane is told apart by how the length header is spelt on the wire (it
 * writes `content-length`; the app's adapter leaves it to node, which writes `Content-Length`),
 * so a test of "the same answer" cannot pass by both requests having taken the app.
 */
import http from 'node:http';
import pino from 'pino';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GatewaySchema } from '../../src/core/config/schema.js';
import type { CallContext, RcpService } from '../../src/core/service/contract.js';
import type { JsonObject } from '../../src/core/protocol/jsonrpc.js';
import { silentLogger } from '../../src/node/observability/log.js';
import { lanePath, plainHost } from '../../src/node/server/direct-lane.js';
import { startHttpServer, type RunningHttpServer } from '../../src/node/server/listen.js';

let calls = 0;
const service: RcpService = {
  defaultDeadlineMs: 5_000,
  describe: () => ({ protocolVersion: 1, server: { name: 'svc' }, capabilities: { retrieve: {}, streaming: {} } }),
  call: async (method: string, params: JsonObject, ctx: CallContext) => {
    calls += 1;
    if (params.query === 'explode') throw new TypeError('a fault of the service');
    // An answer that cannot be serialised: a fault while answering, past the service.
    if (params.query === 'bigint') return { n: 1n } as unknown as JsonObject;
    if (params.query === 'headers') return { seen: ctx.headers['x-probe'] ?? null, traceId: ctx.trace.traceId.length };
    return { method, echo: params };
  },
};

interface RawAnswer {
  status: number;
  body: string;
  headers: Record<string, string | string[] | undefined>;
  /** Header names as written on the wire. */
  names: string[];
}

function send(url: string, path: string, body: string, headers: Record<string, string> = {}, chunked = false): Promise<RawAnswer> {
  const target = new URL(url);
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: target.hostname,
        port: target.port,
        method: 'POST',
        path,
        agent: false,
        headers: { 'content-type': 'application/json', ...(chunked ? {} : { 'content-length': Buffer.byteLength(body) }), ...headers },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, body: text, headers: res.headers, names: res.rawHeaders.filter((_, i) => i % 2 === 0) }),
        );
      },
    );
    req.on('error', reject);
    if (chunked) {
      req.write(body.slice(0, 10));
      req.end(body.slice(10));
    } else req.end(body);
  });
}

const SETTINGS = { host: '127.0.0.1', port: 0, maxBodyBytes: 2_000 };
let lane: RunningHttpServer;
let app: RunningHttpServer;
let cors: RunningHttpServer;

beforeAll(async () => {
  lane = await startHttpServer(service, GatewaySchema.parse(SETTINGS), silentLogger());
  app = await startHttpServer(service, GatewaySchema.parse({ ...SETTINGS, directLane: false }), silentLogger());
  cors = await startHttpServer(service, GatewaySchema.parse({ ...SETTINGS, corsOrigins: ['https://app.test'] }), silentLogger());
});

afterAll(async () => {
  await Promise.all([lane.close(1_000), app.close(1_000), cors.close(1_000)]);
});

const request = (id: number, method: string, params: JsonObject): string => JSON.stringify({ jsonrpc: '2.0', id, method, params });

/** [what, path, body, headers, chunked, whether the lane takes it ('no body': it does, but writes no length to tell)] */
const CASES: Array<[string, string, string, Record<string, string>, boolean, boolean | 'no body']> = [
  ['a request on the method path', '/rcp/retrieve', request(1, 'retrieve', { query: 'q', k: 3 }), {}, false, true],
  ['a request on the base path', '/rcp', request('a' as unknown as number, 'retrieve', { query: 'q' }), {}, false, true],
  ['a query string', '/rcp/retrieve?x=1', request(2, 'retrieve', { query: 'q' }), {}, false, true],
  ['a trailing slash', '/rcp/', request(3, 'retrieve', { query: 'q' }), {}, false, true],
  ['the compact envelope', '/rcp/retrieve', JSON.stringify({ method: 'retrieve', params: { query: 'c' } }), {}, false, true],
  ['a batch with a mismatched member', '/rcp/retrieve', `[${request(4, 'retrieve', {})},${request(5, 'graph', {})}]`, {}, false, true],
  [
    'notifications only (204)',
    '/rcp',
    JSON.stringify({ jsonrpc: '2.0', method: 'notifications/cancel', params: { id: 9 } }),
    {},
    false,
    'no body',
  ],
  ['a body that is not JSON (400)', '/rcp/retrieve', '{not json', {}, false, true],
  ['a method mismatch (-32600)', '/rcp/retrieve', request(6, 'graph', {}), {}, false, true],
  ['an unknown method (-32004)', '/rcp/nope', request(7, 'nope', {}), {}, false, true],
  ['a wrong media type (415)', '/rcp/retrieve', request(8, 'retrieve', {}), { 'content-type': 'text/plain' }, false, true],
  ['a declared length over the cap (413)', '/rcp/retrieve', request(9, 'retrieve', { query: 'x'.repeat(3_000) }), {}, false, true],
  ['a chunked body over the cap (413)', '/rcp/retrieve', request(10, 'retrieve', { query: 'x'.repeat(3_000) }), {}, true, true],
  ['a chunked body under the cap', '/rcp/retrieve', request(11, 'retrieve', { query: 'chunked' }), {}, true, true],
  ['headers for the service', '/rcp/retrieve', request(12, 'retrieve', { query: 'headers' }), { 'X-Probe': 'p' }, false, true],
  ['a fault of the service (-32603)', '/rcp/retrieve', request(13, 'retrieve', { query: 'explode' }), {}, false, true],
  ['a percent-encoded path', '/rcp/index%2Fadd', request(14, 'index/add', {}), {}, false, false],
  ['a bad percent-encoding (400)', '/rcp/%E0%A4%A', request(15, 'x', {}), {}, false, false],
  ['a dot segment', '/rcp/../rcp/retrieve', request(16, 'retrieve', {}), {}, false, false],
  ['an SSE request', '/rcp/retrieve', request(17, 'retrieve', { query: 's' }), { accept: 'text/event-stream' }, false, false],
  ['a path outside the base (404)', '/other', request(18, 'retrieve', {}), {}, false, false],
];

/** What a client acts on: status, body, and these headers (a stream's framing is the app's either way). */
function comparable(answer: RawAnswer): unknown {
  const pick = (name: string): unknown => answer.headers[name];
  const type = pick('content-type')?.toString() ?? '';
  const body = type.includes('json') ? JSON.parse(answer.body || 'null') : answer.body;
  if (type.includes('event-stream')) return { status: answer.status, body, type };
  return {
    status: answer.status,
    body,
    type,
    length: pick('content-length'),
    connection: pick('connection'),
    retryAfter: pick('retry-after'),
  };
}

describe('the direct lane of the Node listener', () => {
  it('is on with nothing but the endpoint under the base; off when switched off, or when CORS (or an auth guard) must see the requests', async () => {
    expect(lane.directLane).toBe(true);
    expect(app.directLane).toBe(false);
    expect(cors.directLane).toBe(false);
    // With CORS the app answers, headers and all.
    const viaCors = await send(cors.url, '/rcp/retrieve', request(1, 'retrieve', { query: 'q' }), { origin: 'https://app.test' });
    expect(viaCors.status).toBe(200);
    expect(viaCors.headers['access-control-allow-origin']).toBe('https://app.test');
  });

  it.each(CASES)('answers %s exactly as the app does', async (_what, path, body, headers, chunked, laned) => {
    const viaLane = await send(lane.url, path, body, headers, chunked);
    const viaApp = await send(app.url, path, body, headers, chunked);
    expect(comparable(viaLane)).toEqual(comparable(viaApp));
    // Which route answered: only the lane spells the length header lower-case.
    if (laned !== 'no body') expect(viaLane.names.includes('content-length')).toBe(laned);
    else expect(viaLane.status).toBe(204);
    expect(viaApp.names.includes('content-length')).toBe(false);
  });

  it('keeps the connection usable after each answer (keep-alive), through the lane', async () => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const target = new URL(lane.url);
    const ask = (id: number): Promise<{ status: number; body: string; socket: unknown }> =>
      new Promise((resolve, reject) => {
        const req = http.request(
          {
            host: target.hostname,
            port: target.port,
            method: 'POST',
            path: '/rcp/retrieve',
            agent,
            headers: { 'content-type': 'application/json' },
          },
          (res) => {
            let text = '';
            res.on('data', (chunk: Buffer) => (text += chunk.toString()));
            res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text, socket: req.socket }));
          },
        );
        req.on('error', reject);
        req.end(request(id, 'retrieve', { query: `k${id}` }));
      });
    const first = await ask(1);
    const second = await ask(2);
    const third = await ask(3);
    expect([first.status, second.status, third.status]).toEqual([200, 200, 200]);
    expect(JSON.parse(third.body)).toMatchObject({ id: 3, result: { echo: { query: 'k3' } } });
    expect(second.socket).toBe(first.socket);
    expect(third.socket).toBe(first.socket);
    agent.destroy();
  });
});

/** Raw bytes on a fresh socket: the first response's head, and whether the server closed the connection. */
function raw(url: string, text: string): Promise<{ head: string; closed: boolean }> {
  const target = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(target.port), target.hostname);
    let got = '';
    socket.on('data', (chunk: Buffer) => {
      got += chunk.toString('latin1');
      if (got.includes('\r\n\r\n')) {
        socket.destroy();
        resolve({ head: got.slice(0, got.indexOf('\r\n\r\n')), closed: false });
      }
    });
    socket.on('error', reject);
    socket.on('end', () => resolve({ head: got, closed: true }));
    socket.write(text);
  });
}

/**
 * Answered before its body was read (415), a client keeps pushing a chunked body: the server must
 * stop reading it and close the connection (within the adapter's drain limits: 500 ms, 64 MB),
 * not take an unbounded upload. Resolves with how much the client managed to hand over.
 */
function pushAfterEarlyAnswer(url: string): Promise<{ status: string; sent: number }> {
  const target = new URL(url);
  return new Promise((resolve) => {
    const socket = net.connect(Number(target.port), target.hostname);
    const chunk = Buffer.from(`10000\r\n${'y'.repeat(0x10000)}\r\n`);
    let head = '';
    let closed = false;
    const push = (): void => {
      while (!closed && socket.write(chunk));
    };
    socket.on('data', (data: Buffer) => {
      head += data.toString('latin1');
    });
    socket.on('drain', push);
    socket.on('error', () => undefined);
    socket.on('close', () => {
      closed = true;
      resolve({ status: head.slice(0, 12), sent: socket.bytesWritten });
    });
    socket.write('POST /rcp/retrieve HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: text/plain\r\ntransfer-encoding: chunked\r\n\r\n');
    push();
  });
}

describe('the direct lane against hostile clients', () => {
  it('closes a connection whose client keeps pushing a body after an early answer, as the app does', async () => {
    for (const server of [lane, app]) {
      // Resolves only once the server closed the connection: the client never stops pushing.
      const { status, sent } = await pushAfterEarlyAnswer(server.url);
      expect(status).toBe('HTTP/1.1 415');
      expect(sent).toBeGreaterThan(0);
    }
  }, 20_000);

  it('leaves a Host header it would have to parse to the app, which refuses what does not parse', async () => {
    const body = request(30, 'retrieve', { query: 'host' });
    for (const host of ['a b', 'evil.test/x', 'h?x', 'h:99999', 'u@h']) {
      const before = calls;
      for (const server of [lane, app]) {
        const target = new URL(server.url);
        const answer = await raw(
          server.url,
          `POST /rcp/retrieve HTTP/1.1\r\nhost: ${host}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
        );
        expect(answer.head.slice(0, 12), `${host} on port ${target.port}`).toBe('HTTP/1.1 400');
      }
      expect(calls, host).toBe(before);
    }
  });
});

describe('faults while answering', () => {
  it('answer 500 on both routes and are logged once, through the gateway logger; a client gone mid-body is a debug line', async () => {
    const lines: Array<{ msg: string; level: number }> = [];
    let onLine: (() => void) | undefined;
    const logger = pino(
      { level: 'debug' },
      {
        write: (line: string) => {
          lines.push(JSON.parse(line) as { msg: string; level: number });
          onLine?.();
        },
      },
    );
    const count = (msg: string): number => lines.filter((line) => line.msg === msg).length;
    const servers = [
      await startHttpServer(service, GatewaySchema.parse(SETTINGS), logger),
      await startHttpServer(service, GatewaySchema.parse({ ...SETTINGS, directLane: false }), logger),
    ];
    try {
      for (const server of servers) {
        const answer = await send(server.url, '/rcp/retrieve', request(40, 'retrieve', { query: 'bigint' }));
        expect([answer.status, answer.body]).toEqual([500, 'Internal Server Error']);
      }
      const faults = lines.filter((line) => line.msg === 'http handler error');
      expect(faults).toHaveLength(2);
      expect(faults.every((line) => line.level === 50)).toBe(true);
      // A client that leaves mid-body is no fault of the gateway: a debug line, on both routes.
      for (const server of servers) {
        const target = new URL(server.url);
        const before = count('client gone before its answer');
        const logged = new Promise<void>((resolve) => {
          onLine = () => {
            if (count('client gone before its answer') > before) resolve();
          };
        });
        const socket = net.connect(Number(target.port), target.hostname, () => {
          socket.write(
            'POST /rcp/retrieve HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{"jsonrpc"',
            () => setImmediate(() => socket.destroy()),
          );
        });
        socket.on('error', () => undefined);
        await logged;
      }
      expect(lines.filter((line) => line.msg === 'http handler error')).toHaveLength(2);
      expect(lines.filter((line) => line.msg === 'client gone before its answer').every((line) => line.level === 20)).toBe(true);
    } finally {
      await Promise.all(servers.map((server) => server.close(1_000)));
    }
  });
});

describe('plainHost', () => {
  it('takes names and addresses with an optional port in range, and no header at all', () => {
    for (const host of [undefined, 'localhost', '127.0.0.1', '127.0.0.1:8787', 'gw.example-1.test:65535', 'a_b:0', 'GW.TEST'])
      expect(plainHost(host), String(host)).toBe(true);
  });

  it('leaves everything else to the app', () => {
    for (const host of ['', 'a b', 'evil.test/x', 'h?x', 'h:99999', 'h:65536', 'u@h', '[::1]:8787', 'h:', 'h:1:2', 'é.test'])
      expect(plainHost(host), host).toBe(false);
  });
});

describe('lanePath', () => {
  it('takes origin-form paths under the base with plain characters, the query dropped', () => {
    expect(lanePath('/rcp', '/rcp')).toBe('/rcp');
    expect(lanePath('/rcp/retrieve', '/rcp')).toBe('/rcp/retrieve');
    expect(lanePath('/rcp/index/add?x=%zz#f', '/rcp')).toBe('/rcp/index/add');
    expect(lanePath('/rcp/x-rcpgw/catalog/watch', '/rcp')).toBe('/rcp/x-rcpgw/catalog/watch');
    expect(lanePath('/anything/at/all', '')).toBe('/anything/at/all');
  });

  it('leaves everything else to the app', () => {
    for (const url of [
      '/rcpx',
      '/rc',
      '/',
      '/other/rcp',
      '/rcp/a%2Fb',
      '/rcp/./retrieve',
      '/rcp/../x',
      '/rcp/.hidden',
      'http://h/rcp',
      '*',
      '/rcp/a b',
      '/rcp/ü',
      '/rcp\\x',
    ])
      expect(lanePath(url, '/rcp'), url).toBeUndefined();
    expect(lanePath(undefined, '/rcp')).toBeUndefined();
  });
});
