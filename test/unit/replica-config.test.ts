/**
 * Replica sets seen from outside the transport: the `urls` and `hedge` config keys, hot reload
 * of an engine whose replicas change, and the catalog/list entry (replicas by index under the
 * vendor key, URLs hidden).
 */
import { describe, expect, it } from 'vitest';
import { validateConfig } from '../../src/core/config/validate.js';
import type { GatewayConfig } from '../../src/core/config/schema.js';
import { planReload } from '../../src/core/ops/reload-plan.js';
import { Engine } from '../../src/core/upstream/engine.js';
import { catalogEntry } from '../../src/core/federation/catalog.js';
import { ReplicaTransport } from '../../src/core/upstream/replicas.js';
import { UpstreamError } from '../../src/core/upstream/errors.js';
import type { JsonObject } from '../../src/core/protocol/jsonrpc.js';
import { FakeTransport, silent } from './upstream-fakes.js';

describe('config', () => {
  const problems = (engine: Record<string, unknown>): string => {
    try {
      validateConfig({ engines: [{ id: 'e', transport: 'http', ...engine }] }, {});
      return '';
    } catch (err) {
      return (err as Error).message;
    }
  };

  it('takes urls with an optional hedge, and refuses what cannot work', () => {
    const config = validateConfig({ engines: [{ id: 'e', transport: 'http', urls: ['http://a/rcp', 'http://b/rcp'], hedge: {} }] }, {});
    expect(config.engines[0]!.hedge).toEqual({ budget: 0.05 });
    expect(problems({ urls: ['http://a/rcp'] })).toMatch(/engines\[0\]\.urls: expected two or more replica URLs/);
    expect(problems({ url: 'http://a/rcp', urls: ['http://a/rcp', 'http://b/rcp'] })).toMatch(/url or urls, not both/);
    expect(problems({ url: 'http://a/rcp', hedge: { delayMs: 20 } })).toMatch(/engines\[0\]\.hedge: hedging needs replicas/);
    expect(problems({ urls: ['http://a/rcp', 'http://b/rcp'], hedge: { budget: 2 } })).toMatch(/engines\[0\]\.hedge\.budget/);
  });

  it('refuses two spellings of one server as two replicas', () => {
    for (const twin of ['http://a/rcp', 'http://A./rcp/', 'http://a:80/rcp']) {
      expect(problems({ urls: ['http://a/rcp', 'http://b/rcp', twin] })).toMatch(/urls.*2.*the same server as urls\[0\]/);
    }
    expect(problems({ urls: ['http://a/rcp', 'http://a:8080/rcp', 'https://a/rcp', 'http://a/other'] })).toBe('');
  });

  it('refuses a timer duration a timer cannot wait (past 2^31 − 1 ms, which would fire at once)', () => {
    const urls = ['http://a/rcp', 'http://b/rcp'];
    expect(problems({ urls, hedge: { delayMs: 2 ** 31 - 1 } })).toBe('');
    expect(problems({ urls, hedge: { delayMs: 2 ** 31 } })).toMatch(/engines\[0\]\.hedge\.delayMs: expected at most 2147483647 ms/);
    expect(problems({ url: 'http://a/rcp', timeoutMs: 3e9 })).toMatch(/engines\[0\]\.timeoutMs: expected at most 2147483647 ms/);
    expect(() => validateConfig({ engines: [], gateway: { deadlineMs: 3e9 } }, {})).toThrow(/gateway\.deadlineMs: expected at most/);
  });
});

describe('hot reload', () => {
  it('replaces an engine whose replicas or hedge changed, and keeps one whose did not', () => {
    const engines = (urls: string[], hedge?: object): GatewayConfig =>
      validateConfig({ engines: [{ id: 'e', transport: 'http', urls, ...(hedge ? { hedge } : {}) }] }, {});
    const before = engines(['http://a/rcp', 'http://b/rcp']);
    const current = [{ id: 'e', config: before.engines[0]! }];
    expect(planReload(current, before.gateway, engines(['http://a/rcp', 'http://b/rcp'])).summary.replaced).toEqual([]);
    expect(planReload(current, before.gateway, engines(['http://a/rcp', 'http://c/rcp'])).summary.replaced).toEqual(['e']);
    expect(planReload(current, before.gateway, engines(['http://a/rcp', 'http://b/rcp'], {})).summary.replaced).toEqual(['e']);
  });
});

describe('catalog/list', () => {
  it('shows each replica by index under the vendor key, never its URL', async () => {
    const config = validateConfig(
      { engines: [{ id: 'e', transport: 'http', urls: ['http://secret-a:1/rcp', 'http://secret-b:1/rcp'], hedge: { delayMs: 30 } }] },
      {},
    );
    const engine = new Engine(config.engines[0]!, config.gateway, {
      logger: silent,
      transports: (engineConfig) =>
        new ReplicaTransport(
          engineConfig.urls!.map(() => new FakeTransport(() => Promise.resolve({ protocolVersion: 1 }))),
          { hedge: engineConfig.hedge! },
        ),
    });
    await engine.start();
    const entry = catalogEntry(engine, false);
    expect((entry._meta as JsonObject)['x-rcpgw']).toEqual({
      replicas: [
        { replica: 0, state: 'up', inFlight: 0, calls: 1, ejections: 0 },
        { replica: 1, state: 'up', inFlight: 0, calls: 1, ejections: 0 },
      ],
      hedges: { sent: 0, won: 0, lost: 0, denied: 0, capped: 0, delayMs: 30 },
    });
    expect(JSON.stringify(entry)).not.toContain('secret');
    await engine.stop();
  });

  it('says why an engine is down without the address the platform named, unless endpoints are shown', async () => {
    const config = validateConfig(
      { engines: [{ id: 'e', transport: 'http', urls: ['http://10.0.0.7:9102/rcp', 'http://10.0.0.8:9102/rcp'] }] },
      {},
    );
    const refusedAt = (url: string): Promise<JsonObject> =>
      Promise.reject(new UpstreamError('transport', `request failed: connect ECONNREFUSED ${new URL(url).host}`));
    const engine = new Engine(config.engines[0]!, config.gateway, {
      logger: silent,
      transports: (engineConfig) => new ReplicaTransport(engineConfig.urls!.map((url) => new FakeTransport(() => refusedAt(url)))),
    });
    await engine.start();
    expect(engine.status).not.toBe('ready');
    expect(engine.lastError).toContain('10.0.0.'); // the log and operators keep the platform's words
    const hidden = catalogEntry(engine, false);
    expect((hidden._meta as JsonObject).lastError).toBe('the engine could not be reached');
    expect(JSON.stringify(hidden)).not.toMatch(/10\.0\.0\.|9102/);
    expect((catalogEntry(engine, true)._meta as JsonObject).lastError).toContain('ECONNREFUSED');
    await engine.stop();
  });
});
