/**
 * The happy path's promise budget: how many promises one plain `retrieve` creates inside the
 * gateway (session, gateway, fan-out, each engine's call pipeline), counted with V8's promise
 * hooks, not timed. Every promise is an allocation and a microtask on every request; the CPU diet
 * cut them here from 42 to 17 with one engine and from 16 to 8 per further engine (a lone leg
 * needs no join; bench/RESULTS.md, 2026-12-02, promises), then to 6 per further engine (the
 * fan-out's join a count, not Promise.all; bench/RESULTS.md, stop 35). A change that puts an async layer back on every request or every leg
 * fails here, and has to say why it is worth it (and raise the bound).
 */
import v8 from 'node:v8';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigSchema } from '../../src/core/config/schema.js';
import { Gateway } from '../../src/core/gateway/gateway.js';
import type { JsonObject } from '../../src/core/protocol/jsonrpc.js';
import { Session } from '../../src/core/session/session.js';
import type { UpstreamTransport } from '../../src/core/upstream/transport.js';
import { silentLogger } from '../../src/node/observability/log.js';

const CAPS = { retrieve: { maxK: 100, modes: ['sparse'] } };

/** An engine answering at once from memory, each answer parsed from its text as a wire transport would. */
function memoryTransport(engine: number): UpstreamTransport {
  const hits = Array.from({ length: 20 }, (_, i) => ({ id: `e${engine}-d${i}`, score: 20 - i, text: `doc ${i}` }));
  const answer = JSON.stringify({ hits, usage: { candidates: 20 } });
  return {
    kind: 'http',
    call: (method) =>
      Promise.resolve(
        method === 'initialize'
          ? ({ protocolVersion: 1, server: { name: `mem-${engine}`, version: '1' }, capabilities: CAPS } as JsonObject)
          : (JSON.parse(answer) as JsonObject),
      ),
    notify: () => undefined,
    close: () => Promise.resolve(),
  };
}

const gateways: Gateway[] = [];
afterEach(async () => {
  await Promise.all(gateways.splice(0).map((g) => g.stop()));
});

async function promisesPerRetrieve(engines: number): Promise<number> {
  const config = ConfigSchema.parse({
    engines: Array.from({ length: engines }, (_, i) => ({ id: `e${i}`, transport: 'http', url: `http://e${i}.invalid/rcp` })),
    gateway: { logLevel: 'silent' },
  });
  const gateway = new Gateway(config, { logger: silentLogger(), transports: (engine) => memoryTransport(Number(engine.id.slice(1))) });
  gateways.push(gateway);
  await gateway.start();
  let id = 0;
  const retrieve = async (): Promise<unknown> => {
    const session = new Session(gateway, { transport: 'http', stateless: true });
    const value = { jsonrpc: '2.0', id: ++id, method: 'retrieve', params: { query: 'rank fusion', k: 10 } };
    return session.handle({ value, headers: {} });
  };
  for (let i = 0; i < 20; i++) await retrieve(); // past first-call work (capability caches, lazy keys)
  let counting = false;
  let created = 0;
  const stop = v8.promiseHooks.onInit(() => {
    if (counting) created++;
  });
  try {
    counting = true;
    const answer = (await retrieve()) as { result?: { hits?: unknown[]; nextCursor?: string } };
    counting = false;
    // The counted request is the plain happy path: a full first page, with a cursor to the next.
    expect(answer.result?.hits).toHaveLength(10);
    expect(typeof answer.result?.nextCursor).toBe('string');
  } finally {
    counting = false;
    stop();
  }
  return created;
}

describe('promises per plain retrieve (allocation budget of the happy path)', () => {
  it('one engine: at most 18', async () => {
    const created = await promisesPerRetrieve(1);
    expect(created).toBeGreaterThan(0); // the hook did count
    expect(created).toBeLessThanOrEqual(18);
  });

  it('three engines: at most 6 more per further engine', async () => {
    const one = await promisesPerRetrieve(1);
    const three = await promisesPerRetrieve(3);
    expect(three).toBeGreaterThan(one);
    expect(three - one).toBeLessThanOrEqual(2 * 6);
  });
});
