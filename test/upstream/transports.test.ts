/**
 * The outbound HTTP transports, held to one contract: the undici transport (Node) and the
 * fetch transport (workerd, Deno, Bun) run the same cases against the same real local engines —
 * the independent test engine, the raw-SSE fixture, and a fixture server for HTTP statuses and
 * bodies that never end. Every failure must carry the same reason on both (§5.2, §12), since the
 * breaker, retries and degraded answers are decided from it.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HttpTransport } from '../../src/node/upstream/http.js';
import { FetchTransport } from '../../src/core/upstream/fetch-transport.js';
import { UpstreamError, type UpstreamFailure } from '../../src/core/upstream/errors.js';
import type { UpstreamCallOptions, UpstreamTransport } from '../../src/core/upstream/transport.js';
import type { JsonObject } from '../../src/core/protocol/jsonrpc.js';
import { startHttpEngine, tmpDir, waitForEvent, writeControl, type EngineHandle } from '../support/processes.js';
import { cleanups, runCleanups, startRawSseEngine } from '../streaming/helpers.js';

interface TransportKind {
  name: string;
  make(url: string, headers?: Record<string, string>): UpstreamTransport;
}

const KINDS: TransportKind[] = [
  { name: 'undici', make: (url, headers) => new HttpTransport({ url, connections: 4, ...(headers ? { headers } : {}) }) },
  { name: 'fetch', make: (url, headers) => new FetchTransport({ url, ...(headers ? { headers } : {}) }) },
];

const dir = tmpDir('rcp-transports-');
let tricky: { url: string };
let noFinal: { url: string };
let fixture: FixtureServer;

beforeAll(async () => {
  tricky = await startRawSseEngine('tricky', 'tricky');
  noFinal = await startRawSseEngine('no-final', 'no-final');
  fixture = await startFixture();
  cleanups.push(() => fixture.close());
});

afterAll(runCleanups);

const OPTIONS: UpstreamCallOptions = { timeoutMs: 5_000, maxResponseBytes: 1_048_576 };

/** The call's failure (the test fails if it succeeded or failed with anything but an UpstreamError). */
async function failure(pending: Promise<JsonObject>): Promise<UpstreamError> {
  const outcome = await pending.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(outcome).toBeInstanceOf(UpstreamError);
  return outcome as UpstreamError;
}

function expectReason(err: UpstreamError, reason: UpstreamFailure, message?: RegExp): void {
  expect({ reason: err.reason, message: err.message }).toEqual({
    reason,
    message: message ? expect.stringMatching(message) : expect.any(String),
  });
}

describe.each(KINDS)('$name transport', (kind) => {
  // An engine of its own per transport, and one transport for the calls whose engine-side events
  // are matched by id: a transport numbers its calls from 1, so ids are unique only within one.
  const control = `${dir}/${kind.name}.json`;
  let engine: EngineHandle;
  let shared: UpstreamTransport;
  const transports: UpstreamTransport[] = [];
  const open = (url: string, headers?: Record<string, string>): UpstreamTransport => {
    const transport = kind.make(url, headers);
    transports.push(transport);
    return transport;
  };
  beforeAll(async () => {
    writeControl(control, { fault: 'ok' });
    engine = await startHttpEngine(['--id', kind.name, '--control', control]);
    cleanups.push(() => engine.stop());
    shared = open(engine.url);
  });
  afterAll(async () => {
    await Promise.all(transports.map((t) => t.close()));
  });

  describe('answers', () => {
    it('reads a JSON answer, sending the configured and the per-call headers', async () => {
      writeControl(control, { fault: 'ok' });
      const transport = open(engine.url, { 'x-engine-key': 'k1' });
      const query = `retrieval fusion ${kind.name} json`;
      const result = await transport.call(
        'retrieve',
        { query, k: 3 },
        { ...OPTIONS, headers: { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' } },
      );
      expect((result.hits as Array<{ id: string }>).length).toBe(3);
      const request = await waitForEvent(engine.eventsFile, (e) => e.ev === 'request' && e.params?.query === query);
      expect(request.headers).toMatchObject({
        'x-engine-key': 'k1',
        traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
        accept: 'application/json',
      });
      expect(request.params?._meta).toBeUndefined(); // no progress token unless streaming
    });

    it('streams SSE progress under its own per-leg token and settles with the final frame', async () => {
      writeControl(control, { fault: 'ok', progressFrames: 3 });
      const transport = open(engine.url);
      const frames: JsonObject[] = [];
      const query = `retrieval ${kind.name} sse`;
      const result = await transport.call(
        'retrieve',
        { query, k: 2, _meta: { progressToken: 'client-token' } },
        {
          ...OPTIONS,
          stream: true,
          onProgress: (frame) => frames.push(frame),
        },
      );
      expect((result.hits as unknown[]).length).toBe(2);
      expect(frames.map((f) => f.progress)).toEqual([0.33, 0.66, 1]);
      const token = frames[0]!.progressToken;
      expect(token).toMatch(/^gw-\d+$/); // the leg's own token replaces the client's (§9)
      for (const frame of frames) expect(frame.progressToken).toBe(token);
      const request = await waitForEvent(engine.eventsFile, (e) => e.ev === 'request' && e.params?.query === query);
      expect(request.headers?.accept).toContain('text/event-stream');
    });

    it('parses CRLF, comments and frames split across chunks; ignores other tokens', async () => {
      const frames: JsonObject[] = [];
      const result = await open(tricky.url).call(
        'retrieve',
        { query: 'retrieval fusion', k: 3 },
        { ...OPTIONS, stream: true, onProgress: (f) => frames.push(f) },
      );
      expect((result.hits as Array<{ id: string }>).map((h) => h.id)).toEqual(['tricky-1', 'tricky-2', 'tricky-3']);
      expect(frames.map((f) => f.message)).toEqual(['halfway']);
    });

    it('reads an SSE answer the engine chose for a call that asked for JSON', async () => {
      const result = await open(`${fixture.url}/sse-unasked/${kind.name}`).call('retrieve', {}, OPTIONS);
      expect(result).toEqual({ hits: [], unasked: true });
    });

    it('settles at the final SSE frame, drops the rest of the stream, and the next call gets a fresh connection', async () => {
      const path = `/sse-then-more/${kind.name}`;
      const closed = fixture.closedEarly(path);
      const transport = open(`${fixture.url}${path}`);
      await expect(transport.call('retrieve', {}, { ...OPTIONS, stream: true, onProgress: () => undefined })).resolves.toEqual({
        hits: [],
      });
      await closed;
      await expect(transport.call('ping', {}, OPTIONS)).resolves.toEqual({ again: true });
    });

    it('posts a notification', async () => {
      shared.notify('notifications/cancel', { id: `never-sent-${kind.name}` });
      const cancel = await waitForEvent(engine.eventsFile, (e) => e.ev === 'cancel' && e.id === `never-sent-${kind.name}`);
      expect(cancel.known).toBe(false);
    });
  });

  describe('paths', () => {
    it('posts every method to its own path under the base, call after call; a name outside the grammar never leaves', async () => {
      // An echo server: the answer names the path the request came to; every path it saw is kept.
      const seen: string[] = [];
      const echo = http.createServer((req, res) => {
        seen.push(req.url ?? '');
        let body = '';
        req.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
        req.on('end', () => {
          const { id } = JSON.parse(body) as { id: number };
          res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id, result: { path: req.url } }));
        });
      });
      await new Promise<void>((resolve) => echo.listen(0, '127.0.0.1', resolve));
      cleanups.push(() => new Promise<void>((resolve) => echo.close(() => resolve())));
      const transport = kind.make(`http://127.0.0.1:${(echo.address() as AddressInfo).port}/base/`);
      cleanups.push(() => transport.close());
      // Many names, each asked twice.
      const names = ['retrieve', 'embed/sparse', ...Array.from({ length: 80 }, (_, i) => `x-acme/op-${i}`)];
      for (const round of [1, 2]) {
        for (const name of names) {
          const answer = await transport.call(name, {}, OPTIONS);
          expect({ round, name, path: answer.path }).toEqual({ round, name, path: `/base/${name}` });
        }
      }
      // %2E%2E is `..` to a WHATWG URL parser: encoding alone would let this one out of /base.
      for (const hostile of ['x/../../admin?all=1#f', 'x-acme/%2e%2e/admin', 'x-acme/..', 'a\r\nb']) {
        await expect(transport.call(hostile, {}, OPTIONS), hostile).rejects.toMatchObject({ code: -32600 });
        transport.notify(hostile, {});
      }
      transport.notify('notifications/cancel', { id: 'last' });
      await expect.poll(() => seen.at(-1)).toBe('/base/notifications/cancel');
      expect(seen.length).toBe(names.length * 2 + 1);
      expect(seen.every((path) => path.startsWith('/base/'))).toBe(true);
    });
  });

  describe('failures', () => {
    it('an engine error is a remote error with its code, data and retryAfterMs', async () => {
      writeControl(control, { fault: 'fail', failCode: -32010 });
      const err = await failure(shared.call('retrieve', { query: 'retrieval' }, OPTIONS));
      expectReason(err, 'remote-error', /injected failure/);
      expect(err.remote).toMatchObject({ code: -32010, data: { detail: 'test-engine fault' } });
      writeControl(control, { fault: 'rate-limit', retryAfterMs: 1500 });
      const limited = await failure(shared.call('retrieve', { query: 'retrieval' }, OPTIONS));
      expect({ reason: limited.reason, code: limited.code, retryAfterMs: limited.retryAfterMs }).toEqual({
        reason: 'remote-error',
        code: -32011,
        retryAfterMs: 1500,
      });
    });

    it('maps HTTP statuses as §5.2 mirrors them', async () => {
      const limited = await failure(open(`${fixture.url}/status/429`).call('retrieve', {}, OPTIONS));
      expect({ reason: limited.reason, code: limited.code, retryAfterMs: limited.retryAfterMs }).toEqual({
        reason: 'remote-error',
        code: -32011,
        retryAfterMs: 2000,
      });
      const tooBig = await failure(open(`${fixture.url}/status/413`).call('retrieve', {}, OPTIONS));
      expect({ reason: tooBig.reason, code: tooBig.code }).toEqual({ reason: 'remote-error', code: -32013 });
      const withBody = await failure(open(`${fixture.url}/status/503-rpc`).call('retrieve', {}, OPTIONS));
      expect({ reason: withBody.reason, code: withBody.code, message: withBody.message }).toEqual({
        reason: 'remote-error',
        code: -32010,
        message: 'engine overloaded',
      });
      expectReason(await failure(open(`${fixture.url}/status/500`).call('retrieve', {}, OPTIONS)), 'transport', /^HTTP 500$/);
      expectReason(
        await failure(open(`${engine.url.replace(/\/rcp$/, '')}/elsewhere`).call('retrieve', {}, OPTIONS)),
        'transport',
        /^HTTP 404$/,
      );
    });

    it('a body that is not JSON-RPC, or answers another id, is malformed', async () => {
      writeControl(control, { fault: 'garbage' });
      expectReason(await failure(shared.call('retrieve', { query: 'retrieval' }, OPTIONS)), 'malformed', /not valid JSON/);
      writeControl(control, { fault: 'unknown-id' });
      expectReason(await failure(shared.call('retrieve', { query: 'retrieval' }, OPTIONS)), 'malformed', /unknown id/);
      writeControl(control, { fault: 'garbage', progressFrames: 1 });
      expectReason(
        await failure(shared.call('retrieve', { query: 'retrieval' }, { ...OPTIONS, stream: true, onProgress: () => undefined })),
        'malformed',
        /SSE frame is not valid JSON/,
      );
    });

    it('an SSE stream that ends without its final frame is malformed', async () => {
      expectReason(
        await failure(open(noFinal.url).call('retrieve', { query: 'x' }, { ...OPTIONS, stream: true, onProgress: () => undefined })),
        'malformed',
        /without a final response frame/,
      );
    });

    it('an answer cut off mid-body is a transport failure', async () => {
      writeControl(control, { fault: 'close-mid-answer' });
      expectReason(await failure(shared.call('retrieve', { query: 'retrieval' }, OPTIONS)), 'transport', /^reading answer failed/);
    });

    it('a refused connection is a transport failure', async () => {
      expectReason(
        await failure(open(`http://127.0.0.1:${fixture.closedPort}/rcp`).call('ping', {}, OPTIONS)),
        'transport',
        /^request failed/,
      );
    });

    it('a closed transport refuses calls as a transport failure', async () => {
      const transport = open(engine.url);
      await transport.close();
      expectReason(await failure(transport.call('ping', {}, OPTIONS)), 'transport');
    });
  });

  describe('the size cap, enforced while reading', () => {
    it('refuses an oversized JSON answer', async () => {
      writeControl(control, { fault: 'huge', hugeBytes: 200_000 });
      expectReason(
        await failure(shared.call('retrieve', { query: 'retrieval' }, { ...OPTIONS, maxResponseBytes: 50_000 })),
        'too-large',
        /exceeds 50000 bytes/,
      );
    });

    for (const body of ['json', 'sse'] as const) {
      it(`stops reading a ${body} body that passes the cap and never ends`, async () => {
        const path = `/endless/${body}/${kind.name}`;
        const closed = fixture.closedEarly(path);
        const started = performance.now();
        const err = await failure(
          open(`${fixture.url}${path}`).call(
            'retrieve',
            {},
            { timeoutMs: 10_000, maxResponseBytes: 20_000, stream: body === 'sse', onProgress: () => undefined },
          ),
        );
        expectReason(err, 'too-large'); // not 'timeout': it did not wait for the end
        expect(performance.now() - started).toBeLessThan(9_000);
        await closed; // and the connection was dropped, so the engine stops sending
      });
    }
  });

  describe('cancellation', () => {
    it('a hanging engine is cut at the call timeout; the engine sees its request aborted', async () => {
      writeControl(control, { fault: 'hang' });
      const query = `retrieval ${kind.name} hang`;
      const err = await failure(shared.call('retrieve', { query }, { ...OPTIONS, timeoutMs: 300 }));
      expectReason(err, 'timeout', /no answer within 300 ms/);
      const request = await waitForEvent(engine.eventsFile, (e) => e.ev === 'request' && e.params?.query === query);
      await waitForEvent(engine.eventsFile, (e) => e.ev === 'abort' && e.id === request.id);
    });

    it('the caller aborting mid-SSE fails the call as aborted and aborts the engine request', async () => {
      writeControl(control, { fault: 'hang', progressFrames: 1 });
      const query = `retrieval ${kind.name} abort`;
      const caller = new AbortController();
      const err = await failure(
        shared.call(
          'retrieve',
          { query },
          {
            ...OPTIONS,
            signal: caller.signal,
            stream: true,
            onProgress: () => caller.abort('disconnect'),
          },
        ),
      );
      expectReason(err, 'aborted', /disconnect/);
      const request = await waitForEvent(engine.eventsFile, (e) => e.ev === 'request' && e.params?.query === query);
      await waitForEvent(engine.eventsFile, (e) => e.ev === 'abort' && e.id === request.id);
    });

    it('a signal already aborted never reaches the engine as an answer', async () => {
      writeControl(control, { fault: 'ok' });
      const err = await failure(shared.call('ping', {}, { ...OPTIONS, signal: AbortSignal.abort('cancel') }));
      expectReason(err, 'aborted', /cancel/);
    });
  });
});

// ------------------------------------------------------------------ fixture server --

interface FixtureServer {
  url: string;
  /** A port nothing listens on. */
  closedPort: number;
  /** Resolves once the client dropped the connection of a request to `path` before it ended. */
  closedEarly(path: string): Promise<void>;
  close(): Promise<void>;
}

/** Statuses and never-ending bodies the test engine does not produce, on a real local socket. */
async function startFixture(): Promise<FixtureServer> {
  const waiters = new Map<string, () => void>();
  const server = http.createServer((req, res) => {
    const url = req.url ?? '/';
    req.resume();
    res.on('close', () => {
      if (!res.writableFinished) waiters.get(url.replace(/\/retrieve$/, ''))?.();
    });
    const rpcError = JSON.stringify({ jsonrpc: '2.0', id: 1, error: { code: -32010, message: 'engine overloaded' } });
    if (url.startsWith('/status/429')) return void res.writeHead(429, { 'retry-after': '2' }).end('slow down');
    if (url.startsWith('/status/413')) return void res.writeHead(413).end();
    if (url.startsWith('/status/503-rpc')) return void res.writeHead(503, { 'content-type': 'application/json' }).end(rpcError);
    if (url.startsWith('/status/500')) return void res.writeHead(500).end('oops');
    if (url.startsWith('/endless/json')) {
      res.writeHead(200, { 'content-type': 'application/json' });
      return void res.write(`{"jsonrpc":"2.0","id":1,"result":{"pad":"${'x'.repeat(30_000)}`);
    }
    if (url.startsWith('/sse-unasked')) {
      // An SSE answer to a call that asked for JSON: still an answer (§5.2 lets the server choose).
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      return void res.end(`data: ${JSON.stringify({ jsonrpc: '2.0', id: 1, result: { hits: [], unasked: true } })}\n\n`);
    }
    if (url.startsWith('/sse-then-more') && url.endsWith('/ping')) {
      res.writeHead(200, { 'content-type': 'application/json' });
      return void res.end(JSON.stringify({ jsonrpc: '2.0', id: 2, result: { again: true } }));
    }
    if (url.startsWith('/sse-then-more')) {
      // The final frame, then a stream that goes on: the client must stop reading and drop it.
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(`data: ${JSON.stringify({ jsonrpc: '2.0', id: 1, result: { hits: [] } })}\n\n`);
      const more = setInterval(() => res.write(`: ${'x'.repeat(1_000)}\n\n`), 20);
      res.on('close', () => clearInterval(more));
      return;
    }
    if (url.startsWith('/endless/sse')) {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      return void res.write(`: ${'x'.repeat(30_000)}\n\n`);
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const spare = http.createServer();
  await new Promise<void>((resolve) => spare.listen(0, '127.0.0.1', resolve));
  const closedPort = (spare.address() as AddressInfo).port;
  await new Promise<void>((resolve) => spare.close(() => resolve()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    closedPort,
    closedEarly: (path) => new Promise<void>((resolve) => waiters.set(path, resolve)),
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
