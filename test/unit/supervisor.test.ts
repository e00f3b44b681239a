/**
 * Engine supervision and the Engine as a client, in process: a fake transport (with a fake
 * process lifecycle) from a fake TransportFactory, fake timers for the restart backoff.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ConfigSchema, type GatewayConfig } from '../../src/core/config/schema.js';
import type { JsonObject } from '../../src/core/protocol/jsonrpc.js';
import { catalogEntry } from '../../src/core/federation/catalog.js';
import { Engine, type EngineStatus } from '../../src/core/upstream/engine.js';
import { UpstreamError } from '../../src/core/upstream/errors.js';
import { handshake } from '../../src/core/upstream/handshake.js';
import { Supervisor } from '../../src/core/upstream/supervisor.js';
import type { TransportEvents, TransportFactory, TransportLifecycle } from '../../src/core/upstream/transport.js';
import { FakeTransport, silent, type Sent } from './upstream-fakes.js';

const INIT_OK = {
  protocolVersion: 1,
  server: { name: 'fake', version: '9' },
  capabilities: { retrieve: { modes: ['dense'] }, streaming: {}, junk: 3 },
};

/** A transport that owns a (pretend) process. */
class ProcessTransport extends FakeTransport implements TransportLifecycle {
  readonly lifecycle: TransportLifecycle = this;
  alive = false;
  starts = 0;
  kills = 0;
  pid: number | undefined;

  start(): Promise<void> {
    this.starts++;
    this.alive = true;
    this.pid = 1_000 + this.starts;
    return Promise.resolve();
  }

  kill(): void {
    this.kills++;
    this.alive = false;
  }
}

/** Answers initialize with `init()` (a result, or an error to throw), everything else with `{ ok: true }`. */
function answering(init: () => JsonObject | UpstreamError): (sent: Sent) => Promise<JsonObject> {
  return (sent) => {
    if (sent.method !== 'initialize') return Promise.resolve({ ok: true });
    const answer = init();
    return answer instanceof UpstreamError ? Promise.reject(answer) : Promise.resolve(answer);
  };
}

function supervisorOf(transport: FakeTransport, statuses: EngineStatus[] = []): Supervisor {
  return new Supervisor(transport, {
    clientName: 'gw',
    engineId: 'e1',
    timeoutMs: 1_000,
    maxResponseBytes: 10_000,
    restartDelayMs: 100,
    restartMaxDelayMs: 400,
    logger: silent,
    onStatus: (s) => statuses.push(s),
  });
}

beforeEach(() => {
  vi.useFakeTimers();
});

afterEach(() => {
  vi.useRealTimers();
  vi.restoreAllMocks();
});

describe('handshake', () => {
  it('offers our version and frames, keeps only object capabilities, and falls back to the engine id for a name', async () => {
    const transport = new FakeTransport(answering(() => ({ protocolVersion: 1, capabilities: { retrieve: {}, odd: 'x' } })));
    const result = await handshake(transport, { clientName: 'gw', engineId: 'e1', timeoutMs: 500, maxResponseBytes: 100 });
    expect(result).toEqual({ via: 'initialize', server: { name: 'e1' }, capabilities: { retrieve: {} } });
    expect(transport.sent[0]!.params).toMatchObject({
      protocolVersion: 1,
      client: { name: 'gw' },
      capabilities: { streaming: {}, log: {} },
    });
    expect(transport.sent[0]!.options).toMatchObject({ timeoutMs: 500, maxResponseBytes: 100 });
  });

  it('falls back to info when the engine refuses a second initialize with -32600 (§13, §7.2), and only then', async () => {
    const refusing = (code: number) =>
      new FakeTransport((sent) =>
        sent.method === 'initialize'
          ? Promise.reject(new UpstreamError('remote-error', 'already initialized', { code, message: 'already initialized' }))
          : Promise.resolve({ protocolVersion: 1, server: { name: 'sdk' }, capabilities: { retrieve: { maxK: 9 } } }),
      );
    const options = { clientName: 'gw', engineId: 'e1', timeoutMs: 500, maxResponseBytes: 100 };
    const transport = refusing(-32600);
    expect(await handshake(transport, options)).toEqual({ via: 'info', server: { name: 'sdk' }, capabilities: { retrieve: { maxK: 9 } } });
    expect(transport.sent.map((sent) => sent.method)).toEqual(['initialize', 'info']);
    // Any other refusal is a failed initialize (the engine stays down and is retried).
    await expect(handshake(refusing(-32002), options)).rejects.toMatchObject({ reason: 'remote-error' });
  });

  it('refuses an answer without a usable protocolVersion', async () => {
    const transport = new FakeTransport(answering(() => ({ server: { name: 'x' } })));
    await expect(handshake(transport, { clientName: 'gw', engineId: 'e1', timeoutMs: 500, maxResponseBytes: 100 })).rejects.toMatchObject({
      reason: 'malformed',
    });
  });
});

describe('supervisor', () => {
  it('starts the process, initializes, and is ready with the first capabilities', async () => {
    const transport = new ProcessTransport(answering(() => INIT_OK));
    const statuses: EngineStatus[] = [];
    const supervisor = supervisorOf(transport, statuses);
    expect(supervisor.notReady()).toMatchObject({ reason: 'not-ready', message: 'engine is starting' });
    await expect(supervisor.start()).resolves.toBe(true);
    expect(transport.starts).toBe(1);
    expect(supervisor.status).toBe('ready');
    expect(supervisor.notReady()).toBeUndefined();
    expect(supervisor.server).toEqual({ name: 'fake', version: '9' });
    expect(Object.keys(supervisor.capabilities!)).toEqual(['retrieve', 'streaming']);
    expect(statuses).toEqual(['ready']);
  });

  it('a failed initialize goes down, kills the process, and restarts with capped exponential backoff', async () => {
    vi.spyOn(Math, 'random').mockReturnValue(0.5); // no jitter: delays are exactly 100, 200, 400, 400 ms
    let healthyAfter = 4;
    const transport = new ProcessTransport(answering(() => (healthyAfter-- > 0 ? new UpstreamError('transport', 'refused') : INIT_OK)));
    const statuses: EngineStatus[] = [];
    const supervisor = supervisorOf(transport, statuses);
    await expect(supervisor.start()).resolves.toBe(false);
    expect(supervisor.status).toBe('down');
    expect(supervisor.notReady()!.message).toBe('engine is down: refused');
    const initializes = (): number => transport.sent.filter((s) => s.method === 'initialize').length;
    for (const delay of [100, 200, 400]) {
      const before = initializes();
      await vi.advanceTimersByTimeAsync(delay - 1);
      expect(initializes()).toBe(before);
      await vi.advanceTimersByTimeAsync(1);
      expect(initializes()).toBe(before + 1);
      expect(supervisor.status).toBe('down');
    }
    await vi.advanceTimersByTimeAsync(400); // capped
    expect(supervisor.status).toBe('ready');
    expect(supervisor.lastError).toBeUndefined();
    // Each failed restart killed the process it had started; each restart started a fresh one.
    expect(transport.kills).toBe(3);
    expect(transport.starts).toBe(4);
    expect(statuses).toEqual(['down', 'ready']);
  });

  it('a process that exits marks the engine down and is restarted, keeping its first capabilities (§13.2)', async () => {
    vi.spyOn(Math, 'random').mockReturnValue(0.5);
    let caps: JsonObject = INIT_OK.capabilities;
    const transport = new ProcessTransport(answering(() => ({ ...INIT_OK, capabilities: caps })));
    const supervisor = supervisorOf(transport);
    await supervisor.start();
    transport.alive = false;
    caps = { graph: {} };
    supervisor.processExited(null, 'SIGKILL');
    expect(supervisor.status).toBe('down');
    expect(supervisor.lastError).toBe('process exited (SIGKILL)');
    await vi.advanceTimersByTimeAsync(100);
    expect(supervisor.status).toBe('ready');
    expect(transport.starts).toBe(2);
    expect(Object.keys(supervisor.capabilities!)).toEqual(['retrieve', 'streaming']);
  });

  it('once stopped, neither an exit nor a pending restart brings it back', async () => {
    const transport = new ProcessTransport(answering(() => new UpstreamError('transport', 'refused')));
    const supervisor = supervisorOf(transport);
    await supervisor.start();
    supervisor.stop();
    supervisor.processExited(1, null);
    await vi.advanceTimersByTimeAsync(10_000);
    expect(supervisor.status).toBe('stopped');
    expect(transport.starts).toBe(1);
  });
});

describe('engine over a TransportFactory', () => {
  function config(): GatewayConfig {
    return ConfigSchema.parse({
      engines: [{ id: 'e1', transport: 'http', url: 'http://127.0.0.1:1/rcp', maxConcurrent: 3 }],
      gateway: { name: 'gw' },
    });
  }

  it('builds its transport from the factory, routes transport events, and serves calls through its pipeline', async () => {
    const transport = new FakeTransport(answering(() => INIT_OK));
    let events: TransportEvents | undefined;
    const factory: TransportFactory = (engineConfig, limits, ev) => {
      expect(engineConfig.id).toBe('e1');
      expect(limits).toMatchObject({ connections: 3, maxResponseBytes: config().gateway.maxResponseBytes });
      const spare = limits.spareSlot?.(); // the engine's limiter has a slot to spare for a hedge
      expect(spare).toBeTypeOf('function');
      spare?.();
      events = ev;
      return transport;
    };
    const logs: Array<[string, JsonObject]> = [];
    const {
      engines: [engineConfig],
      gateway,
    } = config();
    const engine = new Engine(engineConfig!, gateway, {
      logger: silent,
      transports: factory,
      hooks: { onLog: (id, frame) => logs.push([id, frame]) },
    });
    await expect(engine.call({ method: 'retrieve', params: {}, deadlineAt: performance.now() + 1_000 })).rejects.toMatchObject({
      reason: 'not-ready',
    });
    expect(await engine.start()).toBe(true);
    expect(engine.pid).toBeUndefined();
    await expect(engine.call({ method: 'retrieve', params: { query: 'q' }, deadlineAt: performance.now() + 1_000 })).resolves.toEqual({
      ok: true,
    });
    const sent = transport.sent.at(-1)!;
    expect(sent.params).toMatchObject({ query: 'q', _meta: { deadlineMs: 999 } });
    events!.onLog({ level: 'info', message: 'hello' });
    expect(logs).toEqual([['e1', { level: 'info', message: 'hello' }]]);
    expect(catalogEntry(engine, false)).toMatchObject({
      id: 'e1',
      server: { name: 'fake' },
      _meta: { status: 'ready', breaker: 'closed', inFlight: 0, queueDepth: 0 },
    });
    expect(catalogEntry(engine, true).endpoint).toEqual({ transport: 'http', url: 'http://127.0.0.1:1/rcp' });
    await engine.stop();
    expect(engine.status).toBe('stopped');
    expect(transport.closed).toBe(true);
  });
});
