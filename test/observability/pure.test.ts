/**
 * The pure decisions behind readiness, reload planning and metric labels, checked case by case
 * (the process-level suites show them wired up; these pin every branch).
 */
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/node/config/load.js';
import type { EngineConfig } from '../../src/core/config/schema.js';
import { readiness } from '../../src/core/http/health.js';
import { codeLabel, methodLabel } from '../../src/node/observability/metrics.js';
import { carryRestartOnly, planReload } from '../../src/core/ops/reload-plan.js';
import { Generations } from '../../src/core/ops/generations.js';

const view = (id: string, status: string, breaker: string) => ({
  id,
  status,
  queueDepth: 0,
  activeCalls: 0,
  breaker: { currentState: breaker },
});

describe('readiness', () => {
  it('needs one initialized engine whose breaker is not open, and no drain', () => {
    expect(readiness([view('a', 'ready', 'closed')], false)).toMatchObject({ ready: true });
    expect(readiness([view('a', 'ready', 'half-open'), view('b', 'down', 'closed')], false)).toMatchObject({ ready: true });
    expect(readiness([], false)).toMatchObject({ ready: false, reason: 'no engine is initialized' });
    expect(readiness([view('a', 'down', 'closed'), view('b', 'starting', 'closed')], false)).toMatchObject({
      ready: false,
      reason: 'no engine is initialized',
    });
    expect(readiness([view('a', 'ready', 'open'), view('b', 'down', 'closed')], false)).toMatchObject({
      ready: false,
      reason: 'every ready engine has an open circuit breaker',
      engines: { total: 2, ready: 1, breakerOpen: 1 },
    });
    expect(readiness([view('a', 'ready', 'closed')], true)).toMatchObject({ ready: false, reason: 'draining for shutdown' });
  });
});

describe('metric labels', () => {
  it('keep the RCP roster and collapse everything else', () => {
    expect(methodLabel('retrieve')).toBe('retrieve');
    expect(methodLabel('index/add')).toBe('index/add');
    expect(methodLabel('x-acme/anything-at-all')).toBe('x-vendor');
    expect(methodLabel('what is this')).toBe('other');
    expect(codeLabel(0)).toBe('0');
    expect(codeLabel(-32010)).toBe('-32010');
    expect(codeLabel(-32099)).toBe('other');
    expect(codeLabel(12345)).toBe('other');
  });
});

function config(engines: Array<Partial<EngineConfig> & { id: string }>, gateway: Record<string, unknown> = {}) {
  return parseConfig(
    { engines: engines.map((e) => ({ transport: 'http', url: `http://127.0.0.1:1/${e.id}`, ...e })), gateway },
    { baseDir: '/' },
  ).config;
}

describe('reload planning', () => {
  const current = config([{ id: 'keep' }, { id: 'tune' }, { id: 'move' }, { id: 'drop' }, { id: 'inherit' }]);
  const engines = current.engines.map((c) => ({ id: c.id, config: c }));

  it('keeps unchanged engines, retunes policy changes, replaces connection changes', () => {
    const next = config(
      [
        { id: 'keep' },
        { id: 'tune', weight: 3, priority: 9 },
        { id: 'move', url: 'http://127.0.0.1:2/elsewhere' },
        { id: 'inherit' },
        { id: 'new' },
      ],
      { engineTimeoutMs: 8_000 },
    );
    const plan = planReload(engines, current.gateway, next);
    expect(plan.summary).toEqual({
      added: ['new'],
      removed: ['drop'],
      replaced: ['move'],
      retuned: ['tune'],
      unchanged: ['keep', 'inherit'],
    });
    expect(plan.retire.map((e) => e.id).sort()).toEqual(['drop', 'move']);
    expect(plan.slots.map((s) => ('keep' in s ? `keep:${s.keep.id}` : `create:${s.create.id}`))).toEqual([
      'keep:keep',
      'keep:tune',
      'create:move',
      'keep:inherit',
      'create:new',
    ]);
  });

  it('treats a changed inherited default (timeout, breaker) as a connection change', () => {
    const slower = planReload(engines, current.gateway, config(current.engines, { engineTimeoutMs: 9_000 }));
    expect(slower.summary.replaced).toEqual(['keep', 'tune', 'move', 'drop', 'inherit']);
    const pinned = config(
      current.engines.map((e) => ({ ...e, timeoutMs: 8_000 })),
      { engineTimeoutMs: 9_000 },
    );
    expect(planReload(engines, current.gateway, pinned).summary.replaced).toEqual([]);
    const breaker = planReload(engines, current.gateway, config(current.engines, { breaker: { volumeThreshold: 9 } }));
    expect(breaker.summary.replaced).toHaveLength(5);
    // Spelling out a default is no change.
    expect(planReload(engines, current.gateway, config(current.engines, { breaker: { volumeThreshold: 5 } })).summary.replaced).toEqual([]);
  });

  it('keeps listener-bound settings and names the ones a reload cannot change', () => {
    const before = config([{ id: 'a' }], { port: 8787, basePath: '/rcp', deadlineMs: 5_000 }).gateway;
    const after = config([{ id: 'a' }], { port: 9999, basePath: '/other', deadlineMs: 7_000 }).gateway;
    const { settings, ignored } = carryRestartOnly(before, after);
    expect(ignored.sort()).toEqual(['basePath', 'port']);
    expect(settings).toMatchObject({ port: 8787, basePath: '/rcp', deadlineMs: 7_000 });
  });
});

describe('request generations', () => {
  it('resolve a reload drain only when every earlier request has left', async () => {
    const generations = new Generations();
    const first = generations.enter();
    const drained1 = generations.advance();
    const second = generations.enter();
    const drained2 = generations.advance();
    let done1 = false;
    let done2 = false;
    void drained1.then(() => {
      done1 = true;
    });
    void drained2.then(() => {
      done2 = true;
    });
    generations.leave(second);
    await Promise.resolve();
    await Promise.resolve();
    expect(done2).toBe(false); // the first generation still has a request
    expect(generations.drainingRequests).toBe(1);
    generations.leave(first);
    await drained2;
    await drained1;
    expect(done1 && done2).toBe(true);
    expect(generations.drainingRequests).toBe(0);
    // Nothing in flight: an advance resolves at once.
    await generations.advance();
  });
});
