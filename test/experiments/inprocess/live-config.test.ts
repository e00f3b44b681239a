/**
 * Live experiments and the config: a hot reload starts and stops an experiment for new requests,
 * the report is off unless enabled, and the shadow gate's budget refills over time.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigSchema } from '../../../src/core/config/schema.js';
import { ShadowGate } from '../../../src/core/experiments/shadow-gate.js';
import type { JsonObject } from '../../../src/core/protocol/jsonrpc.js';
import { FakeEngine } from '../../support/fake-engine.js';
import { startInProcess, type InProcessGateway } from '../../support/in-process.js';

let running: InProcessGateway | undefined;
afterEach(async () => {
  await running?.stop();
  running = undefined;
});

const experiments = {
  arms: { onlyA: { engines: ['a'] }, onlyB: { engines: ['b'] } },
  list: [{ id: 'ab', kind: 'split', arms: { onlyA: 1, onlyB: 1 } }],
};

const tagOf = async (gw: InProcessGateway): Promise<unknown> => {
  const answer = await gw.call('retrieve', { query: 'q' }, { headers: { 'x-rcpgw-user': 'u1' } });
  return (answer._meta as JsonObject)['x-rcpgw'];
};

describe('experiments and the config', () => {
  it('a hot reload starts and stops an experiment for new requests', async () => {
    running = await startInProcess([new FakeEngine('a'), new FakeEngine('b')]);
    const gw = running;
    expect(await tagOf(gw)).toBeUndefined();
    const withExperiment = ConfigSchema.parse({ ...gw.config, gateway: { ...gw.config.gateway, experiments } });
    await gw.gateway.reload(withExperiment);
    expect(await tagOf(gw)).toMatchObject({ experiment: 'ab' });
    await gw.gateway.reload(ConfigSchema.parse({ ...gw.config, gateway: { ...gw.config.gateway } }));
    expect(await tagOf(gw)).toBeUndefined();
  });

  it('answers x-rcpgw/experiments only when the report is enabled', async () => {
    running = await startInProcess([new FakeEngine('a'), new FakeEngine('b')], { gateway: { experiments } });
    expect(running.gateway.describe().capabilities['x-rcpgw']).toBeUndefined();
    const { response } = await running.request('x-rcpgw/experiments');
    expect('error' in response && response.error.code).toBe(-32003);
  });
});

describe('shadow gate', () => {
  it('allows budgetPerMinute runs at once, then refills continuously', () => {
    const gate = new ShadowGate({ maxConcurrent: 100, budgetPerMinute: 60 }, 0);
    for (let i = 0; i < 60; i++) {
      expect(gate.tryAcquire(0)).toBe('ok');
      gate.release();
    }
    expect(gate.tryAcquire(0)).toBe('budget');
    expect(gate.tryAcquire(999)).toBe('budget'); // 0.999 of a token
    expect(gate.tryAcquire(1_000)).toBe('ok'); // one per second
    expect(gate.tryAcquire(1_000)).toBe('budget');
  });

  it('refuses beyond maxConcurrent until a run is released', () => {
    const gate = new ShadowGate({ maxConcurrent: 1, budgetPerMinute: 600 }, 0);
    expect(gate.tryAcquire(0)).toBe('ok');
    expect(gate.tryAcquire(0)).toBe('concurrency');
    gate.release();
    expect(gate.tryAcquire(0)).toBe('ok');
  });
});
