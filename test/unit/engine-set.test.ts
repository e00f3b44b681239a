/**
 * The live engine set and hot reload (src/core/ops/engine-set.ts) with engine doubles, and the
 * gateway's method table (src/core/gateway/methods.ts): the process-level reload suite shows
 * them wired up; these pin the ordering guarantees one by one.
 */
import { describe, expect, it } from 'vitest';
import type { EngineConfig, GatewayConfig, GatewaySettings } from '../../src/core/config/schema.js';
import { EngineSet, type ManagedEngine } from '../../src/core/ops/engine-set.js';
import { methodHandler } from '../../src/core/gateway/methods.js';
import { routeToOne } from '../../src/core/federation/routing.js';
import { federatedWrite } from '../../src/core/federation/writes.js';
import { parseConfig } from '../../src/node/config/load.js';

class FakeEngine implements ManagedEngine {
  readonly id: string;
  required: boolean;
  lastError: string | undefined;
  started = false;
  stopped = false;
  retunedWith: EngineConfig | undefined;
  private markStopped!: () => void;
  /** Resolves when stop() is called. */
  readonly stopCalled = new Promise<void>((resolve) => {
    this.markStopped = resolve;
  });

  constructor(
    public config: EngineConfig,
    readonly settings: GatewaySettings,
    private readonly startsOk: boolean,
  ) {
    this.id = config.id;
    this.required = config.required;
    if (!startsOk) this.lastError = 'refused';
  }

  async start(): Promise<boolean> {
    this.started = true;
    return this.startsOk;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.markStopped();
  }

  retune(config: EngineConfig): void {
    this.retunedWith = config;
    this.config = config;
  }
}

function config(engines: Array<Partial<EngineConfig> & { id: string }>, gateway: Record<string, unknown> = {}): GatewayConfig {
  return parseConfig(
    { engines: engines.map((e) => ({ transport: 'http', url: `http://127.0.0.1:1/${e.id}`, ...e })), gateway },
    { baseDir: '/' },
  ).config;
}

function engineSet(initial: GatewayConfig, failing: ReadonlySet<string> = new Set()) {
  const made: FakeEngine[] = [];
  const set = new EngineSet(initial, (engine, settings) => {
    const fake = new FakeEngine(engine, settings, !failing.has(engine.id));
    made.push(fake);
    return fake;
  });
  return { set, made };
}

/** A promise with its resolver, so a test decides when a request ends. */
function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}

describe('EngineSet', () => {
  it('starts every engine and refuses to start without a required one', async () => {
    const ok = engineSet(config([{ id: 'a' }, { id: 'b' }]), new Set(['b']));
    await ok.set.start(); // b is optional
    expect(ok.made.map((e) => e.started)).toEqual([true, true]);
    const bad = engineSet(config([{ id: 'a' }, { id: 'b', required: true }]), new Set(['b']));
    await expect(bad.set.start()).rejects.toThrow('required engine(s) failed to start: b (refused)');
  });

  it('keeps a running request on its set and stops retired engines only after it ends', async () => {
    const { set, made } = engineSet(config([{ id: 'keep' }, { id: 'drop' }]));
    const held = gate();
    let seen: string[] = [];
    const request = set.run(async (engines) => {
      seen = engines.map((e) => e.id);
      await held.promise;
      return engines.map((e) => e.id);
    });
    const revision = set.revision;
    const summary = await set.reload(config([{ id: 'keep', weight: 2 }, { id: 'new' }]));
    expect(summary).toMatchObject({ added: ['new'], removed: ['drop'], retuned: ['keep'], ignoredSettings: [] });
    expect(set.engines.map((e) => e.id)).toEqual(['keep', 'new']);
    expect(set.revision).toBe(revision + 1);
    expect(made.find((e) => e.id === 'keep')!.retunedWith?.weight).toBe(2);
    const dropped = made.find((e) => e.id === 'drop')!;
    expect(dropped.stopped).toBe(false); // the request that started before the reload still runs
    held.open();
    expect(await request).toEqual(seen);
    expect(seen).toEqual(['keep', 'drop']);
    await dropped.stopCalled; // retired once the last request of the old set ended
    expect(made.find((e) => e.id === 'keep')!.stopped).toBe(false);
  });

  it('leaves the old set in force when a required new engine cannot start', async () => {
    const { set, made } = engineSet(config([{ id: 'a' }]), new Set(['broken']));
    const before = set.engines;
    await expect(set.reload(config([{ id: 'a' }, { id: 'broken', required: true }]))).rejects.toThrow('broken (refused)');
    expect(set.engines).toBe(before);
    expect(set.revision).toBe(0);
    expect(made.find((e) => e.id === 'broken')!.stopped).toBe(true);
  });

  it('carries restart-only settings over and names them', async () => {
    const { set } = engineSet(config([{ id: 'a' }], { port: 9000 }));
    const summary = await set.reload(config([{ id: 'a' }], { port: 9001, deadlineMs: 1234 }));
    expect(summary.ignoredSettings).toEqual(['port']);
    expect(set.config.gateway.port).toBe(9000);
    expect(set.config.gateway.deadlineMs).toBe(1234);
  });

  it('applies reloads one at a time, in order', async () => {
    const { set } = engineSet(config([{ id: 'a' }]));
    const first = set.reload(config([{ id: 'a' }, { id: 'b' }]));
    const second = set.reload(config([{ id: 'b' }]));
    expect((await first).added).toEqual(['b']);
    expect(await second).toMatchObject({ removed: ['a'], unchanged: ['b'] });
    expect(set.engines.map((e) => e.id)).toEqual(['b']);
  });
});

describe('gateway method table', () => {
  it('answers writes by federation and routes everything else to one engine', () => {
    expect(methodHandler('index/add')).toBe(federatedWrite);
    expect(methodHandler('index/delete')).toBe(federatedWrite);
    for (const method of ['embed', 'rerank', 'x-acme/anything', 'not-a-method', 'toString', 'constructor', '__proto__']) {
      expect(methodHandler(method)).toBe(routeToOne);
    }
    for (const method of ['retrieve', 'graph', 'catalog/list']) expect(methodHandler(method)).not.toBe(routeToOne);
  });
});
