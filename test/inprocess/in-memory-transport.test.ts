/**
 * The in-memory transport pair on its own: the engine side is a real Session, so the §13
 * lifecycle holds (-32001 before initialize); a timeout or an abort fails the call at once and
 * tells the engine (§7.14); progress reaches only its own call (§9), logs reach the call's
 * handler (§17.1); the answer's JSON size is bounded; closing fails what is in flight.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { JsonObject } from '../../src/core/protocol/jsonrpc.js';
import { UpstreamError } from '../../src/core/upstream/errors.js';
import { InMemoryTransport, inMemoryTransports } from '../../src/core/upstream/in-memory.js';
import type { UpstreamCallOptions } from '../../src/core/upstream/transport.js';
import { FakeEngine } from '../support/fake-engine.js';

const INIT = { protocolVersion: 1, client: { name: 'test', version: '0' }, capabilities: { streaming: {}, log: {} } };
const options = (extra: Partial<UpstreamCallOptions> = {}): UpstreamCallOptions => ({
  timeoutMs: 1_000,
  maxResponseBytes: 1_000_000,
  ...extra,
});

async function failure(promise: Promise<unknown>): Promise<UpstreamError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(UpstreamError);
  return err as UpstreamError;
}

async function ready(engine: FakeEngine): Promise<InMemoryTransport> {
  const transport = new InMemoryTransport(engine);
  await transport.call('initialize', INIT, options());
  return transport;
}

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

describe('lifecycle (§13)', () => {
  it('refuses work before initialize, answers after it, and never shares objects with the engine', async () => {
    const engine = new FakeEngine('e', { hits: [{ id: 'a', score: 1 }] });
    const transport = new InMemoryTransport(engine);
    const early = await failure(transport.call('retrieve', { query: 'q' }, options()));
    expect(early).toMatchObject({ reason: 'remote-error', code: -32001 });
    const init = await transport.call('initialize', INIT, options());
    expect(init).toMatchObject({ protocolVersion: 1, server: { name: 'fake-e' }, capabilities: { retrieve: {} } });
    const params: JsonObject = { query: 'q', k: 1 };
    const result = await transport.call('retrieve', params, options());
    expect(result.hits).toEqual([{ id: 'a', score: 1 }]);
    expect(engine.calls[0]!.params).toEqual(params);
    expect(engine.calls[0]!.params).not.toBe(params);
    // A method the engine does not advertise is refused by its Session, not by the transport.
    expect(await failure(transport.call('embed', { inputs: ['x'] }, options()))).toMatchObject({ code: -32003 });
  });

  it('builds one transport per configured engine, and refuses an engine it has no service for', () => {
    const factory = inMemoryTransports((id) => (id === 'known' ? new FakeEngine('known') : undefined));
    const events = { onStderr: () => undefined, onLog: () => undefined, onExit: () => undefined };
    const limits = { connections: 1, maxResponseBytes: 1_000 };
    expect(factory({ id: 'known', transport: 'stdio', command: ['x'], weight: 1, required: false, priority: 0 }, limits, events).kind).toBe(
      'stdio',
    );
    expect(() =>
      factory({ id: 'other', transport: 'http', url: 'http://x.invalid', weight: 1, required: false, priority: 0 }, limits, events),
    ).toThrow('no in-memory service for engine "other"');
  });
});

describe('timeouts and aborts (§7.14)', () => {
  it('times out on the transport clock and tells the engine to stop', async () => {
    const engine = new FakeEngine('e').behave({ delayMs: 5_000 });
    const transport = await ready(engine);
    const call = failure(transport.call('retrieve', { query: 'q' }, options({ timeoutMs: 300 })));
    await vi.advanceTimersByTimeAsync(300);
    expect(await call).toMatchObject({ reason: 'timeout' });
    expect(engine.calls[0]).toMatchObject({ outcome: 'aborted', abortReason: 'cancel' });
  });

  it('fails at once on abort, and refuses a call whose signal already aborted', async () => {
    const engine = new FakeEngine('e').hang();
    const transport = await ready(engine);
    const controller = new AbortController();
    const call = failure(transport.call('retrieve', { query: 'q' }, options({ signal: controller.signal })));
    await vi.advanceTimersByTimeAsync(10);
    controller.abort('deadline');
    expect(await call).toMatchObject({ reason: 'aborted' });
    expect(engine.calls[0]).toMatchObject({ outcome: 'aborted', abortReason: 'cancel' });
    expect(await failure(transport.call('retrieve', { query: 'q' }, options({ signal: controller.signal })))).toMatchObject({
      reason: 'aborted',
    });
    expect(engine.calls).toHaveLength(1);
  });

  it('fails every call in flight when closed, and every later one', async () => {
    const transport = await ready(new FakeEngine('e').hang());
    const call = failure(transport.call('retrieve', { query: 'q' }, options()));
    await transport.close();
    expect(await call).toMatchObject({ reason: 'transport' });
    expect(await failure(transport.call('retrieve', { query: 'q' }, options()))).toMatchObject({ reason: 'transport' });
  });
});

describe('frames (§9, §17.1)', () => {
  it('delivers progress on a per-call token only when streaming was asked for, and logs to the call', async () => {
    const engine = new FakeEngine('e', { capabilities: { retrieve: {}, streaming: {}, log: {} } }).behave({
      progress: [{ progress: 0.5, stage: 'half' }],
      logs: [{ level: 'warning', message: 'slow shard' }],
    });
    const transport = await ready(engine);
    const progress: JsonObject[] = [];
    const logs: JsonObject[] = [];
    await transport.call(
      'retrieve',
      { query: 'q' },
      options({ stream: true, onProgress: (f) => progress.push(f), onLog: (f) => logs.push(f) }),
    );
    expect(progress).toEqual([
      expect.objectContaining({ progress: 0.5, stage: 'half', progressToken: expect.stringMatching(/^gw-/) as unknown }),
    ]);
    expect(logs).toEqual([expect.objectContaining({ level: 'warning', message: 'slow shard' })]);
    const token = (engine.calls[0]!.params._meta as JsonObject).progressToken;
    expect(progress[0]!.progressToken).toBe(token);
    // Without `stream` no token is sent, so the engine has nowhere to send progress.
    const quiet: JsonObject[] = [];
    await transport.call('retrieve', { query: 'q' }, options({ onProgress: (f) => quiet.push(f) }));
    expect(quiet).toEqual([]);
  });
});

describe('answers', () => {
  it('bounds the answer by its JSON size and passes engine errors on with their data', async () => {
    const engine = new FakeEngine('e').behave({ fault: { oversizedBytes: 2_000 } });
    const transport = await ready(engine);
    expect(await failure(transport.call('retrieve', { query: 'q' }, options({ maxResponseBytes: 1_500 })))).toMatchObject({
      reason: 'too-large',
    });
    engine.fail(-32011, { retryAfterMs: 700 });
    const limited = await failure(transport.call('retrieve', { query: 'q' }, options()));
    expect(limited).toMatchObject({ reason: 'remote-error', code: -32011, retryAfterMs: 700 });
  });
});
