/**
 * Engines that keep one session per process (the reference SDK HTTP servers do) answer a second
 * `initialize` with -32600 (§13). Two gateway processes sharing one such engine — a restarted
 * gateway, a second replica — must both bring it up: the second reads the capability set with
 * `info` (§7.2) and says why in its log.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { rpc } from '../support/http-client.js';
import { readEvents, startGateway, startHttpEngine, type EngineHandle, type GatewayHandle } from '../support/processes.js';
import { emittedErrors, schemaCrossCheckBanner } from '../support/spec-validator.js';
import { catalog, QUERY, waitUntil } from '../resilience/helpers.js';

const stops: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const stop of stops.reverse()) await stop();
  console.log(schemaCrossCheckBanner());
  expect(emittedErrors()).toEqual([]);
});

async function gatewayOver(engine: EngineHandle): Promise<GatewayHandle> {
  const gateway = await startGateway({
    config: { engines: [{ id: 'single', transport: 'http', url: engine.url }], gateway: { logLevel: 'info' } },
  });
  stops.push(() => gateway.stop());
  return gateway;
}

describe('an engine that refuses a second initialize (-32600)', () => {
  it('serves two gateway processes: the second falls back to info for the capability set', async () => {
    const engine = await startHttpEngine(['--id', 'single', '--single-session']);
    stops.push(() => engine.stop());
    // The engine really is one-session: a second initialize is -32600.
    const probe = await rpc(engine.url, 'initialize', { protocolVersion: 1, client: { name: 'probe' } }, { validate: false });
    expect(probe.result).toBeDefined();
    const again = await rpc(engine.url, 'initialize', { protocolVersion: 1, client: { name: 'probe' } }, { validate: false });
    expect(again.error?.code).toBe(-32600);

    const first = await gatewayOver(engine);
    const second = await gatewayOver(engine);
    for (const gateway of [first, second]) {
      await waitUntil('engine ready', async () => (await catalog(gateway.url)).get('single')?._meta.status === 'ready');
      const reply = await rpc<{ hits: unknown[]; _meta: { engines: string[] } }>(gateway.url, 'retrieve', { query: QUERY, k: 3 });
      expect(reply.result!.hits).toHaveLength(3);
      expect(reply.result!._meta.engines).toEqual(['single']);
      const info = await rpc<{ capabilities: Record<string, unknown> }>(gateway.url, 'info', {});
      expect(info.result!.capabilities.retrieve).toBeDefined();
      // The log line is written asynchronously through a pipe: wait for it rather than racing it.
      await waitUntil('the fallback log line', () => /refused initialize with -32600.*capabilities read with info/.test(gateway.stderr()));
    }
    const methods = readEvents(engine.eventsFile)
      .filter((e) => e.ev === 'request')
      .map((e) => e.method);
    expect(methods.filter((m) => m === 'initialize')).toHaveLength(4); // probe ×2, then one per gateway
    expect(methods.filter((m) => m === 'info')).toHaveLength(2); // one fallback per gateway (the gateway answers `info` itself)
  });
});
