/**
 * The Session state machine in-process (§13 lifecycle, §4.7 ids, §7.14 cancel, §11 batches),
 * with a small service whose calls the test controls.
 */
import { describe, expect, it } from 'vitest';
import { Session } from '../../src/core/session/session.js';
import type { CallContext, RcpService } from '../../src/core/service/contract.js';
import type { JsonObject, NotificationMessage, ResponseMessage } from '../../src/core/protocol/jsonrpc.js';
import { RcpError } from '../../src/core/protocol/errors.js';

function service(overrides: Partial<RcpService> = {}): RcpService & { calls: CallContext[] } {
  const calls: CallContext[] = [];
  return {
    calls,
    defaultDeadlineMs: 5_000,
    describe: () => ({ protocolVersion: 1, server: { name: 'svc' }, capabilities: { retrieve: {} } }),
    call: async (_method: string, params: JsonObject, ctx: CallContext) => {
      calls.push(ctx);
      return { echo: params };
    },
    ...overrides,
  };
}

const req = (id: unknown, method: string, params: JsonObject = {}): JsonObject => ({ jsonrpc: '2.0', id, method, params });

async function one(session: Session, value: unknown, sink?: (f: NotificationMessage) => void): Promise<ResponseMessage> {
  const answer = await session.handle({ value, sink });
  if (answer === null || Array.isArray(answer)) throw new Error('expected a single response');
  return answer;
}

describe('Session lifecycle (§13)', () => {
  it('gates methods until a successful initialize; a failed one leaves it locked', async () => {
    const session = new Session(service(), { transport: 'stdio', stateless: false });
    expect(await one(session, req(1, 'retrieve', { query: 'q' }))).toMatchObject({ error: { code: -32001 } });
    expect(await one(session, req(2, 'initialize', { protocolVersion: 0 }))).toMatchObject({ error: { code: -32002 } });
    expect(await one(session, req(3, 'retrieve', { query: 'q' }))).toMatchObject({ error: { code: -32001 } });
    expect(await one(session, req(4, 'initialize', { protocolVersion: 9 }))).toMatchObject({ result: { protocolVersion: 1 } });
    expect(await one(session, req(5, 'retrieve', { query: 'q' }))).toMatchObject({ result: { echo: { query: 'q' } } });
    expect(await one(session, req(6, 'initialize', { protocolVersion: 1 }))).toMatchObject({ error: { code: -32600 } });
  });

  it('rejects initialize params of the wrong type with -32602', async () => {
    const session = new Session(service(), { transport: 'stdio', stateless: false });
    expect(await one(session, req(1, 'initialize', { protocolVersion: '1' }))).toMatchObject({
      error: { code: -32602, data: { field: 'protocolVersion' } },
    });
    expect(await one(session, req(2, 'initialize', {}))).toMatchObject({
      error: { code: -32602, data: { field: 'protocolVersion', detail: 'required' } },
    });
  });

  it('keeps the capability set fixed after initialize (§13.2)', async () => {
    let caps: Record<string, JsonObject> = { retrieve: {} };
    const svc = service({ describe: () => ({ protocolVersion: 1, server: { name: 'svc' }, capabilities: caps }) });
    const session = new Session(svc, { transport: 'stdio', stateless: false });
    await one(session, req(1, 'initialize', { protocolVersion: 1 }));
    caps = { retrieve: {}, embed: {} };
    expect(await one(session, req(2, 'embed', { inputs: ['x'] }))).toMatchObject({ error: { code: -32003 } });
    expect(await one(session, req(3, 'info'))).toMatchObject({ result: { capabilities: { retrieve: {} } } });
  });

  it('stops accepting work after shutdown (§13.1)', async () => {
    const session = new Session(service(), { transport: 'stdio', stateless: false });
    await one(session, req(1, 'initialize', { protocolVersion: 1 }));
    expect(await one(session, req(2, 'shutdown'))).toMatchObject({ result: {} });
    expect(session.isShutdown).toBe(true);
    expect(await one(session, req(3, 'retrieve', { query: 'q' }))).toMatchObject({ error: { code: -32010 } });
  });
});

describe('ids, notifications and batches', () => {
  it('echoes ids with their JSON type and rejects null / object ids', async () => {
    const session = new Session(service(), { transport: 'http', stateless: true });
    for (const id of [0, '', '0', 1.5, -2]) expect((await one(session, req(id, 'ping'))).id).toStrictEqual(id);
    expect(await one(session, req(null, 'ping'))).toMatchObject({ id: null, error: { code: -32600 } });
    expect(await one(session, req({ a: 1 }, 'ping'))).toMatchObject({ id: null, error: { code: -32600 } });
  });

  it('rejects a second request with an id that is still in flight', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const session = new Session(
      service({
        call: async () => {
          await gate;
          return {};
        },
      }),
      { transport: 'http', stateless: true },
    );
    const first = session.handle({ value: req(7, 'retrieve', { query: 'q' }) });
    expect(await one(session, req(7, 'retrieve', { query: 'q' }))).toMatchObject({ id: 7, error: { code: -32600 } });
    release();
    expect(await first).toMatchObject({ id: 7, result: {} });
  });

  it('never answers notifications, and answers batches per §11', async () => {
    const session = new Session(service(), { transport: 'http', stateless: true });
    expect(await session.handle({ value: { jsonrpc: '2.0', method: 'notifications/whatever', params: {} } })).toBeNull();
    expect(await session.handle({ value: [] })).toMatchObject({ id: null, error: { code: -32600 } });
    expect(await session.handle({ value: [{ jsonrpc: '2.0', method: 'notifications/x' }] })).toBeNull();
    const mixed = await session.handle({ value: [req('a', 'ping'), 'junk', { jsonrpc: '2.0', method: 'notifications/x' }] });
    expect(mixed).toEqual([
      { jsonrpc: '2.0', id: 'a', result: {} },
      expect.objectContaining({ id: null, error: expect.objectContaining({ code: -32600 }) }),
    ]);
  });
});

describe('cancellation and progress (§7.14, §9)', () => {
  it('answers a cancelled request exactly once with -32006 and aborts its signal', async () => {
    const svc = service({
      call: (_m, _p, ctx) =>
        new Promise((_resolve, reject) => {
          ctx.signal.addEventListener('abort', () => reject(new RcpError(-32603, 'late failure after abort')));
        }),
    });
    const session = new Session(svc, { transport: 'stdio', stateless: false });
    await one(session, req(1, 'initialize', { protocolVersion: 1 }));
    const pending = session.handle({ value: req(2, 'retrieve', { query: 'q' }) });
    await session.handle({ value: { jsonrpc: '2.0', method: 'notifications/cancel', params: { id: 2 } } });
    expect(await pending).toMatchObject({ id: 2, error: { code: -32006 } });
    expect(session.inFlightCount).toBe(0);
    // Cancelling an unknown or finished id is a no-op.
    expect(session.cancel(2)).toBe(false);
  });

  it('emits progress only with a token, echoing it verbatim, never after the answer', async () => {
    let emitLate: (() => void) | undefined;
    const svc = service({
      call: async (_m, _p, ctx) => {
        ctx.progress?.({ progress: 0.5, stage: 'recall' });
        emitLate = () => ctx.progress?.({ progress: 1 });
        return { done: true };
      },
    });
    const session = new Session(svc, { transport: 'stdio', stateless: false });
    await one(session, req(1, 'initialize', { protocolVersion: 1 }));
    const frames: NotificationMessage[] = [];
    await one(session, req(2, 'retrieve', { query: 'q' }), (f) => frames.push(f));
    expect(frames).toEqual([]);
    await one(session, req(3, 'retrieve', { query: 'q', _meta: { progressToken: 77 } }), (f) => frames.push(f));
    await one(session, req(4, 'retrieve', { query: 'q', _meta: { progressToken: 'tok' } }), (f) => frames.push(f));
    expect(frames.map((f) => f.params.progressToken)).toEqual([77, 'tok']);
    emitLate?.();
    expect(frames).toHaveLength(2);
  });

  it('answers -32014 itself when the service overruns the deadline', async () => {
    const svc = service({ defaultDeadlineMs: 30, call: () => new Promise(() => undefined) });
    const session = new Session(svc, { transport: 'http', stateless: true, deadlineGraceMs: 5 });
    expect(await one(session, req(1, 'retrieve', { query: 'q' }))).toMatchObject({ error: { code: -32014 } });
  });

  it('rejects a malformed _meta with -32602', async () => {
    const session = new Session(service(), { transport: 'http', stateless: true });
    expect(await one(session, req(1, 'retrieve', { query: 'q', _meta: { progressToken: 1.5 } }))).toMatchObject({
      error: { code: -32602, data: { field: '_meta.progressToken' } },
    });
  });
});

describe('Session observers', () => {
  it('answers what the request produced, once, when the onFinished observer throws', async () => {
    const seen: string[] = [];
    const onFinished = (info: { method: string }): void => {
      seen.push(info.method);
      throw new Error('observer failed');
    };
    const session = new Session(service(), { transport: 'stdio', stateless: false, onFinished });
    // A lifecycle answer (the session's own) and a dispatched one (the service's).
    expect(await one(session, req(1, 'initialize', { protocolVersion: 1 }))).toMatchObject({ result: { protocolVersion: 1 } });
    expect(await one(session, req(2, 'retrieve', { query: 'q' }))).toMatchObject({ result: { echo: { query: 'q' } } });
    expect(seen).toEqual(['initialize', 'retrieve']);
  });
});
