/**
 * The undici transport (HttpTransport over Pool.dispatch and AnswerReader) against an engine that
 * breaks HTTP on purpose: a raw TCP server that lies about Content-Length, floods tiny chunks,
 * sends informational answers, endless SSE lines, invalid UTF-8, malformed framing, answers
 * before reading the request, or never answers (calls and notifications). Every call must settle
 * exactly once, within its timeout, with the right reason, give its bytes back to the ByteBudget,
 * and leave the pool usable. The real AnswerReader runs; a subclass only counts its settles.
 * Over 300 lines: one raw server with a fault per request serves every case, and the cases share it.
 */
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { HttpTransport } from '../../src/node/upstream/http.js';
import { ByteBudget } from '../../src/node/upstream/byte-budget.js';
import { UpstreamError } from '../../src/core/upstream/errors.js';
import type { UpstreamCallOptions } from '../../src/core/upstream/transport.js';
import type { JsonObject } from '../../src/core/protocol/jsonrpc.js';

// Every AnswerReader counts how many times it settles its call: a promise hides a second settle.
const settles: number[] = [];
vi.mock('../../src/node/upstream/answer-reader.js', async (importOriginal) => {
  const real = await importOriginal<typeof import('../../src/node/upstream/answer-reader.js')>();
  class CountingReader extends real.AnswerReader {
    constructor(...args: ConstructorParameters<typeof real.AnswerReader>) {
      const [id, token, options, hold, settle] = args;
      const slot = settles.push(0) - 1;
      super(id, token, options, hold, {
        resolve: (r) => (settles[slot]!++, settle.resolve(r)),
        reject: (e) => (settles[slot]!++, settle.reject(e)),
      });
    }
  }
  return { ...real, AnswerReader: CountingReader };
});

type Fault =
  | 'ok'
  | 'short-body'
  | 'long-body'
  | 'chunk-flood'
  | 'early-hints'
  | 'sse-long-line'
  | 'bad-utf8'
  | 'answer-early'
  | 'bad-status-line'
  | 'cl-and-chunked'
  | 'header-flood'
  | 'big-halves'
  | 'sse-progress'
  | 'hang';
const seen: Fault[] = [];
const halves: Array<() => void> = [];
const sockets = new Set<net.Socket>();

function answer(id: unknown, result: JsonObject): string {
  return JSON.stringify({ jsonrpc: '2.0', id, result });
}
function head(status: string, headers: Record<string, string | number>): string {
  return `HTTP/1.1 ${status}\r\n${Object.entries(headers)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('')}\r\n`;
}
/** Writes `piece` until the peer goes away (or `max` bytes), minding backpressure. */
function flood(socket: net.Socket, piece: Buffer | string, max = 64 * 1024 * 1024): void {
  let sent = 0;
  const pump = (): void => {
    while (!socket.destroyed && sent < max) {
      sent += piece.length;
      if (!socket.write(piece)) return void socket.once('drain', pump);
    }
  };
  pump();
}

function respond(socket: net.Socket, fault: Fault, id: unknown, params: JsonObject): void {
  const json = (body: string | Buffer, after = ''): void => {
    const start = head('200 OK', { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    socket.write(Buffer.concat([Buffer.from(start), Buffer.from(body), Buffer.from(after)]));
  };
  switch (fault) {
    case 'ok':
      return json(answer(id, { ok: true, ...params }));
    case 'short-body': {
      const body = answer(id, { ok: true });
      socket.write(head('200 OK', { 'content-type': 'application/json', 'content-length': body.length + 500 }) + body);
      return void socket.end();
    }
    case 'long-body':
      return json(answer(id, { ok: true }), 'HTTP/1.1 200 OK\r\ngarbage');
    case 'chunk-flood':
      socket.write(head('200 OK', { 'content-type': 'application/json', 'transfer-encoding': 'chunked' }));
      return flood(socket, '1\r\n \r\n'.repeat(1000));
    case 'early-hints':
      socket.write(head('103 Early Hints', { link: '</x.css>; rel=preload' }));
      return json(answer(id, { hinted: true }));
    case 'sse-long-line':
      socket.write(head('200 OK', { 'content-type': 'text/event-stream', 'transfer-encoding': 'chunked' }));
      return flood(socket, `4000\r\n${'data: '.padEnd(0x4000, 'a')}\r\n`);
    case 'bad-utf8':
      return json(
        Buffer.concat([Buffer.from(`{"jsonrpc":"2.0","id":${String(id)},"result":{"s":"`), Buffer.from([0xff, 0xc3]), Buffer.from('"}}')]),
      );
    case 'bad-status-line':
      return void socket.write('HTTP/1.1 2OO OK\r\ncontent-length: 2\r\n\r\n{}');
    case 'cl-and-chunked': {
      const body = answer(id, { smuggled: true });
      const size = body.length.toString(16);
      const start = head('200 OK', { 'content-length': 5, 'transfer-encoding': 'chunked' });
      return void socket.write(`${start}${size}\r\n${body}\r\n0\r\n\r\n`);
    }
    case 'header-flood':
      return void socket.write(head('200 OK', { 'x-pad': 'p'.repeat(64 * 1024), 'content-length': 2 }) + '{}');
    case 'big-halves': {
      // 60 KB answers whose second halves wait until every caller holds a first half.
      const body = Buffer.from(answer(id, { pad: 'x'.repeat(60_000), ...params }));
      socket.write(head('200 OK', { 'content-type': 'application/json', 'content-length': body.length }));
      socket.write(body.subarray(0, 40_000));
      halves.push(() => socket.write(body.subarray(40_000)));
      if (halves.length === 3) halves.splice(0).forEach((send) => send());
      return;
    }
    case 'sse-progress': {
      const token = (params._meta as { progressToken: string }).progressToken;
      const progress = { jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: token, progress: 0.5 } };
      const frames = `data: ${JSON.stringify(progress)}\n\ndata: ${answer(id, { late: true })}\n\n`;
      return void socket.write(head('200 OK', { 'content-type': 'text/event-stream', 'content-length': frames.length }) + frames);
    }
    case 'answer-early':
    case 'hang':
      return;
  }
}

/** A raw HTTP/1.1 engine: the `x-fault` request header picks the misbehaviour. */
function startEngine(): Promise<{ url: string; close(): Promise<void> }> {
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.setNoDelay(true); // else Nagle against the client's delayed ACKs stalls keep-alive calls ~40 ms each
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => undefined);
    let buf = Buffer.alloc(0);
    socket.on('data', (data) => {
      buf = Buffer.concat([buf, data]);
      for (;;) {
        const end = buf.indexOf('\r\n\r\n');
        if (end < 0) return;
        const headText = buf.subarray(0, end).toString('latin1');
        const fault = (/\r\nx-fault: *([\w-]+)/i.exec(headText)?.[1] ?? 'ok') as Fault;
        const length = Number(/\r\ncontent-length: *(\d+)/i.exec(headText)?.[1] ?? 0);
        if (fault === 'answer-early') {
          // A fresh transport's first call has id 1; the request body is still on its way.
          seen.push(fault);
          const body = answer(1, { early: true });
          socket.write(head('200 OK', { 'content-type': 'application/json', 'content-length': body.length }) + body);
          return void socket.end(() => socket.destroy());
        }
        if (buf.length < end + 4 + length) return;
        const body = JSON.parse(buf.subarray(end + 4, end + 4 + length).toString()) as { id: unknown; params: JsonObject };
        buf = buf.subarray(end + 4 + length);
        seen.push(fault);
        respond(socket, fault, body.id, body.params);
      }
    });
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({
        url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/rcp`,
        close: () => {
          for (const s of sockets) s.destroy();
          return new Promise((done) => server.close(() => done()));
        },
      }),
    ),
  );
}

let engine: Awaited<ReturnType<typeof startEngine>>;
beforeAll(async () => (engine = await startEngine()));
afterAll(() => engine.close());

const CAP = 65_536;
function open(connections = 4): { transport: HttpTransport; budget: ByteBudget } {
  const budget = new ByteBudget(1_048_576);
  return { transport: new HttpTransport({ url: engine.url, connections, budget }), budget };
}
function options(fault: Fault, extra: Partial<UpstreamCallOptions> = {}): UpstreamCallOptions {
  return { timeoutMs: 3_000, maxResponseBytes: CAP, headers: { 'x-fault': fault }, ...extra };
}
type Outcome = { ok: true; result: JsonObject; ms: number } | { ok: false; err: UpstreamError; ms: number };
function settle(pending: Promise<JsonObject>): Promise<Outcome> {
  const start = performance.now();
  return pending.then(
    (result) => ({ ok: true as const, result, ms: performance.now() - start }),
    (err: UpstreamError) => ({ ok: false as const, err, ms: performance.now() - start }),
  );
}
/** The reason a call failed with ('ok' when it succeeded), failing the test past `ms`. */
async function within(ms: number, pending: Promise<JsonObject>): Promise<string> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`not settled in ${ms} ms`)), ms)));
  const out = await Promise.race([settle(pending), late]).finally(() => clearTimeout(timer));
  if (!out.ok) expect(out.err).toBeInstanceOf(UpstreamError);
  return out.ok ? 'ok' : out.err.reason;
}
async function healthy(transport: HttpTransport, budget: ByteBudget): Promise<void> {
  await expect(transport.call('retrieve', {}, options('ok'))).resolves.toEqual({ ok: true });
  expect(budget.inUse).toBe(0);
  expect(settles.every((n) => n === 1)).toBe(true);
}

describe('HttpTransport against a hostile engine', () => {
  it('1: Content-Length larger than the body, then close → transport failure', async () => {
    const { transport, budget } = open();
    expect(await within(1_000, transport.call('retrieve', {}, options('short-body')))).toBe('transport');
    await healthy(transport, budget);
    await transport.close();
  });

  it('2: bytes after the declared body → the answer is read and the pool stays usable', async () => {
    const { transport, budget } = open(1);
    await expect(transport.call('retrieve', {}, options('long-body'))).resolves.toEqual({ ok: true });
    await healthy(transport, budget);
    await healthy(transport, budget);
    await transport.close();
  });

  it('3: thousands of tiny chunks past maxResponseBytes → too-large, fast', async () => {
    const { transport, budget } = open();
    expect(await within(1_000, transport.call('retrieve', {}, options('chunk-flood')))).toBe('too-large');
    await healthy(transport, budget);
    await transport.close();
  });

  it('4: a 103 Early Hints before the 200 → the 200 answer is read', async () => {
    const { transport, budget } = open();
    await expect(transport.call('retrieve', {}, options('early-hints'))).resolves.toEqual({ hinted: true });
    await healthy(transport, budget);
    await transport.close();
  });

  it('5: one endless SSE line → too-large, not a hang', async () => {
    const { transport, budget } = open();
    expect(await within(1_000, transport.call('retrieve', {}, options('sse-long-line', { stream: true })))).toBe('too-large');
    await healthy(transport, budget);
    await transport.close();
  });

  it('6: invalid UTF-8 in a JSON answer → parsed with U+FFFD', async () => {
    const { transport, budget } = open();
    await expect(transport.call('retrieve', {}, options('bad-utf8'))).resolves.toEqual({ s: '\ufffd\ufffd' });
    await healthy(transport, budget);
    await transport.close();
  });

  it('7: the engine answers before reading a large request body, then closes', async () => {
    const { transport, budget } = open();
    const big = { query: 'x'.repeat(8 * 1024 * 1024) };
    const got = await within(2_000, transport.call('retrieve', big, options('answer-early')));
    expect(got).toMatch(/^(ok|transport)$/);
    await healthy(transport, budget);
    await transport.close();
  });

  it('8: 200 concurrent calls with random faults each settle once, in time', async () => {
    const { transport, budget } = open(4);
    // Not 'hang': a hung call holds one of the 4 connections for its whole timeout, so the rest
    // would mostly time out in the queue (cases 9 and 10 cover queued calls).
    const allowed: Partial<Record<Fault, string[]>> = {
      ok: ['ok', 'timeout'],
      'long-body': ['ok', 'timeout'],
      'early-hints': ['ok', 'timeout'],
      'bad-utf8': ['ok', 'timeout'],
      'short-body': ['transport', 'timeout'],
      'bad-status-line': ['transport', 'timeout'],
      'cl-and-chunked': ['transport', 'timeout'],
      'header-flood': ['transport', 'timeout'],
      'chunk-flood': ['too-large', 'timeout'],
      'sse-long-line': ['too-large', 'timeout'],
    };
    const faults = Object.keys(allowed) as Fault[];
    let seed = 42;
    const pick = (): Fault => faults[((seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) >>> 16) % faults.length]!;
    const timeoutMs = 3_000;
    const before = settles.length;
    const calls = Array.from({ length: 200 }, (_, n) => ({ n, fault: pick() }));
    const outs = await Promise.all(
      calls.map(({ n, fault }) =>
        settle(transport.call('retrieve', { n }, options(fault, { timeoutMs, stream: fault === 'sse-long-line' }))),
      ),
    );
    expect(settles.length - before).toBe(200);
    expect(outs.filter((o) => o.ms > timeoutMs + 1_000)).toEqual([]);
    const wrong = outs.flatMap((o, i) => {
      const { n, fault } = calls[i]!;
      const got = o.ok ? 'ok' : o.err instanceof UpstreamError ? o.err.reason : String(o.err);
      const mine = !o.ok || fault !== 'ok' || o.result.n === n; // an answer never lands on another call
      return allowed[fault]!.includes(got) && mine ? [] : [{ n, fault, got }];
    });
    expect(wrong).toEqual([]);
    expect(outs.filter((o) => o.ok).length).toBeGreaterThan(20); // the faults did not starve the pool
    await healthy(transport, budget);
    await transport.close();
  }, 20_000);

  it('9: the caller aborts a call still queued behind a hanging one → aborted, never sent', async () => {
    const { transport, budget } = open(1);
    const first = new AbortController();
    const hung = settle(transport.call('retrieve', {}, options('hang', { signal: first.signal })));
    const queued = new AbortController();
    const pending = transport.call('retrieve', { probe: 9 }, options('ok', { signal: queued.signal }));
    await vi.waitFor(() => expect(seen.at(-1)).toBe('hang'));
    const sent = seen.length;
    queued.abort();
    expect(await within(200, pending)).toBe('aborted');
    first.abort();
    expect((await hung).ok).toBe(false);
    await healthy(transport, budget);
    expect(seen.slice(sent)).toEqual(['ok']); // only the health call reached the engine
    await transport.close();
  });

  it('10: a timeout before any connection is free → timeout, promptly', async () => {
    const { transport, budget } = open(1);
    const first = new AbortController();
    const hung = settle(transport.call('retrieve', {}, options('hang', { signal: first.signal })));
    await vi.waitFor(() => expect(seen.at(-1)).toBe('hang'));
    expect(await within(400, transport.call('retrieve', {}, options('ok', { timeoutMs: 100 })))).toBe('timeout');
    first.abort();
    await hung;
    await healthy(transport, budget);
    await transport.close();
  });
  it.each(['bad-status-line', 'cl-and-chunked', 'header-flood'] as const)('11: malformed HTTP (%s) → transport failure', async (fault) => {
    const { transport, budget } = open(1);
    expect(await within(1_000, transport.call('retrieve', {}, options(fault)))).toBe('transport');
    await healthy(transport, budget);
    await transport.close();
  });

  it('12: concurrent answers past the gateway-wide budget → too-large for some, bytes all given back', async () => {
    const budget = new ByteBudget(100_000);
    const transport = new HttpTransport({ url: engine.url, connections: 4, budget });
    const outs = await Promise.all(
      [0, 1, 2].map((n) => settle(transport.call('retrieve', { n }, options('big-halves', { maxResponseBytes: 1_048_576 })))),
    );
    const failed = outs.flatMap((o) => (o.ok ? [] : [o.err]));
    expect(failed.length).toBeGreaterThan(0);
    for (const err of failed)
      expect({ reason: err.reason, budget: /maxBufferedUpstreamBytes/.test(err.message) }).toEqual({ reason: 'too-large', budget: true });
    outs.forEach((o, n) => o.ok && expect(o.result.n).toBe(n));
    await healthy(transport, budget);
    await transport.close();
  });

  it('13: the caller aborts from inside onProgress, the final frame in the same chunk → aborted, once', async () => {
    const { transport, budget } = open(1);
    const caller = new AbortController();
    const progress: JsonObject[] = [];
    const pending = transport.call(
      'retrieve',
      {},
      options('sse-progress', { stream: true, signal: caller.signal, onProgress: (f) => (progress.push(f), caller.abort()) }),
    );
    expect(await within(1_000, pending)).toBe('aborted');
    expect(progress).toHaveLength(1);
    await healthy(transport, budget);
    await transport.close();
  });
  it('14: a notification the engine never answers does not hold the only connection for long', async () => {
    const budget = new ByteBudget(1_048_576);
    const transport = new HttpTransport({ url: engine.url, connections: 1, budget, headers: { 'x-fault': 'hang' } });
    transport.notify('notifications/cancel', { id: 1, reason: 'timeout' });
    await vi.waitFor(() => expect(seen.at(-1)).toBe('hang'));
    expect(await within(7_000, transport.call('retrieve', {}, options('ok', { timeoutMs: 6_500 })))).toBe('ok');
    expect(budget.inUse).toBe(0);
    await transport.close();
  }, 10_000);
});
