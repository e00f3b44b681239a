/**
 * The Hono app on web-standard Request/Response alone (`app.fetch`, no Node listener): what a
 * runtime other than Node gets from src/core/http. The Node fast paths are covered by the
 * process-level suites (test/streaming, test/resilience).
 */
import { describe, expect, it } from 'vitest';
import { createHttpApp } from '../../src/core/http/app.js';
import type { AbortLike } from '../../src/core/service/cancellation.js';
import type { CallContext, RcpService } from '../../src/core/service/contract.js';
import type { JsonObject } from '../../src/core/protocol/jsonrpc.js';

function service(call?: RcpService['call']): RcpService & { contexts: CallContext[] } {
  const contexts: CallContext[] = [];
  return {
    contexts,
    defaultDeadlineMs: 5_000,
    describe: () => ({ protocolVersion: 1, server: { name: 'svc' }, capabilities: { retrieve: {}, streaming: {} } }),
    call:
      call ??
      (async (_method: string, params: JsonObject, ctx: CallContext) => {
        contexts.push(ctx);
        return { echo: params };
      }),
  };
}

const OPTIONS = { basePath: '/rcp', maxBodyBytes: 1_000, sseHeartbeatMs: 10_000, streaming: true, corsOrigins: [] };

function post(path: string, body: string | ReadableStream<Uint8Array>, headers: Record<string, string> = {}): Request {
  return new Request(`http://gateway.test${path}`, {
    method: 'POST',
    body,
    headers: { 'content-type': 'application/json', ...headers },
    duplex: 'half',
  } as RequestInit);
}

describe('HTTP app on web standards', () => {
  it('answers JSON-RPC and the compact envelope, with lower-cased headers for the service', async () => {
    const svc = service();
    const app = createHttpApp(svc, OPTIONS);
    const full = await app.fetch(
      post('/rcp/retrieve', JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'retrieve', params: { query: 'q' } }), { 'X-Trace-Me': 'yes' }),
    );
    expect(full.status).toBe(200);
    expect(await full.json()).toEqual({ jsonrpc: '2.0', id: 7, result: { echo: { query: 'q' } } });
    expect(svc.contexts[0]!.headers['x-trace-me']).toBe('yes');
    const compact = await app.fetch(post('/rcp/retrieve', JSON.stringify({ method: 'retrieve', params: { query: 'c' } })));
    expect(await compact.json()).toEqual({ result: { echo: { query: 'c' } } });
  });

  it('maps transport faults to HTTP statuses (§5.2)', async () => {
    const app = createHttpApp(service(), OPTIONS);
    expect((await app.fetch(post('/rcp/retrieve', '{not json'))).status).toBe(400);
    const mismatch = await app.fetch(post('/rcp/retrieve', JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'graph', params: {} })));
    expect(await mismatch.json()).toMatchObject({ id: 1, error: { code: -32600 } });
    const big = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'retrieve', params: { query: 'x'.repeat(2_000) } });
    const declared = await app.fetch(post('/rcp/retrieve', big));
    expect(declared.status).toBe(413);
    expect(await declared.json()).toMatchObject({ error: { code: -32013 } });
    // A streamed body has no declared length: the cap applies to the bytes as they arrive.
    const chunked = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(new TextEncoder().encode(big));
        controller.close();
      },
    });
    expect((await app.fetch(post('/rcp/retrieve', chunked))).status).toBe(413);
  });

  it('refuses before reading when admission says the gateway is full', async () => {
    const app = createHttpApp(service(), { ...OPTIONS, admit: () => ({ ok: false as const, retryAfterMs: 1_500 }) });
    const refused = await app.fetch(post('/rcp/retrieve', '{}'));
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('2');
  });

  it('streams progress then the final frame over SSE', async () => {
    const app = createHttpApp(
      service(async (_method, params, ctx) => {
        ctx.progress?.({ progress: 0.5, stage: 'half' });
        return { echo: params };
      }),
      OPTIONS,
    );
    const body = { jsonrpc: '2.0', id: 3, method: 'retrieve', params: { query: 's', _meta: { progressToken: 'p' } } };
    const response = await app.fetch(post('/rcp/retrieve', JSON.stringify(body), { accept: 'text/event-stream' }));
    expect(response.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    const frames = (await response.text())
      .split('\n\n')
      .filter((f) => f.startsWith('data: '))
      .map((f) => JSON.parse(f.slice(6)));
    expect(frames).toEqual([
      { jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 'p', progress: 0.5, stage: 'half' } },
      { jsonrpc: '2.0', id: 3, result: { echo: { query: 's', _meta: { progressToken: 'p' } } } },
    ]);
  });

  it('aborts the call when the client goes away (request signal)', async () => {
    let seen: AbortLike | undefined;
    let started!: () => void;
    const callStarted = new Promise<void>((resolve) => {
      started = resolve;
    });
    const app = createHttpApp(
      service((_method, _params, ctx) => {
        seen = ctx.signal;
        started();
        return new Promise((_resolve, reject) => ctx.signal.addEventListener('abort', () => reject(new Error('aborted'))));
      }),
      OPTIONS,
    );
    const client = new AbortController();
    const request = new Request('http://gateway.test/rcp/retrieve', {
      method: 'POST',
      signal: client.signal,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'retrieve', params: { query: 'q' } }),
    });
    const answer = app.fetch(request);
    await callStarted;
    client.abort();
    await answer;
    expect(seen!.aborted).toBe(true);
    expect(seen!.reason).toBe('disconnect');
  });
});
