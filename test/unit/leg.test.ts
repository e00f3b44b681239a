/**
 * `runLeg`, the one path every fan-out leg, routed call and write takes to an engine: what it
 * sends (federation path, trace, deadline), what it reports to the hooks, and how a failure
 * comes back (an UpstreamError classified for `_meta.degraded`; a rejection only for the
 * gateway's own fault).
 */
import { describe, expect, it } from 'vitest';
import { ConfigSchema } from '../../src/core/config/schema.js';
import type { JsonObject } from '../../src/core/protocol/jsonrpc.js';
import type { CallContext } from '../../src/core/service/contract.js';
import { testCallContext } from '../support/call-context.js';
import type { FederationContext } from '../../src/core/federation/context.js';
import { legScope, runLeg } from '../../src/core/federation/leg.js';
import { outcomeOf } from '../../src/core/resilience/breaker.js';
import { RetryBudget } from '../../src/core/resilience/retry.js';
import { Engine } from '../../src/core/upstream/engine.js';
import { UpstreamError } from '../../src/core/upstream/errors.js';
import { RcpError } from '../../src/core/protocol/errors.js';
import { FakeTransport, silent, type Sent } from './upstream-fakes.js';

const INIT = { protocolVersion: 1, server: { name: 'fake' }, capabilities: { retrieve: {} } };

async function setup(
  answer: (sent: Sent) => Promise<JsonObject>,
): Promise<{ engine: Engine; transport: FakeTransport; fed: FederationContext; ctx: CallContext; legs: unknown[][] }> {
  const config = ConfigSchema.parse({
    engines: [{ id: 'e1', transport: 'http', url: 'http://127.0.0.1:1/rcp' }],
    gateway: { name: 'gw', deadlineReserveMs: 50, retry: { backoffMs: 0 } },
  });
  const transport = new FakeTransport((sent) => (sent.method === 'initialize' ? Promise.resolve(INIT) : answer(sent)));
  const engine = new Engine(config.engines[0]!, config.gateway, { logger: silent, transports: () => transport });
  await engine.start();
  const legs: unknown[][] = [];
  const fed: FederationContext = {
    engines: [engine],
    settings: config.gateway,
    logger: silent,
    identity: 'gw',
    hooks: { onLeg: (...args) => legs.push(args) },
    retryBudget: new RetryBudget(config.gateway.retry),
  };
  const ctx = testCallContext({ meta: { traceId: '0af7651916cd43dd8448eb211c80319c' } }, 2_000);
  return { engine, transport, fed, ctx, legs };
}

describe('runLeg', () => {
  it('sends the federation path, trace and a deadline short of the reserve, and reports the leg as answered', async () => {
    const { engine, transport, fed, ctx, legs } = await setup(() => Promise.resolve({ hits: [] }));
    const outcome = await runLeg(legScope(ctx, fed), engine, 'retrieve', { query: 'q', _meta: { keep: 1 } });
    expect(outcome).toEqual({ ok: true, result: { hits: [] } });
    const meta = transport.sent.at(-1)!.params._meta as JsonObject;
    expect(meta).toMatchObject({
      keep: 1,
      federation: { depth: expect.any(Number), path: ['gw'] },
      traceId: '0af7651916cd43dd8448eb211c80319c',
    });
    expect(meta.deadlineMs).toBeLessThan(2_000 - 50);
    expect(transport.sent.at(-1)!.options.headers?.traceparent).toMatch(/^00-0af7651916cd43dd8448eb211c80319c-/);
    expect(legs).toEqual([['e1', 'retrieve', 0, expect.any(Number)]]);
    await engine.stop();
  });

  it("turns an engine's error into a classified failure, reported with its code, never a rejection", async () => {
    const { engine, fed, ctx, legs } = await setup(() =>
      Promise.reject(new UpstreamError('remote-error', 'bad field', { code: -32602, message: 'bad field' })),
    );
    const outcome = await runLeg(legScope(ctx, fed), engine, 'retrieve', {});
    expect(outcome).toMatchObject({
      ok: false,
      error: { reason: 'remote-error' },
      failure: { engine: 'e1', code: -32602, reason: 'engine-error' },
    });
    expect(legs).toEqual([['e1', 'retrieve', -32602, expect.any(Number)]]);
    await engine.stop();
  });

  it("rejects with -32603 for anything else thrown (the gateway's own fault, logged with its stack), never an engine's malformed answer", async () => {
    const { engine, fed, ctx, legs } = await setup(() => Promise.reject(new TypeError('boom')));
    const logged: Array<{ fields: Record<string, unknown>; message?: string }> = [];
    const scope = legScope(ctx, { ...fed, logger: { ...silent, error: (fields, message) => logged.push({ fields, message }) } });
    const err = await runLeg(scope, engine, 'retrieve', {}).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(RcpError);
    expect(err).toMatchObject({ code: -32603 });
    expect(logged).toEqual([
      {
        fields: { engine: 'e1', method: 'retrieve', err: { message: 'boom', stack: expect.stringContaining('TypeError: boom') } },
        message: 'gateway error',
      },
    ]);
    expect(legs).toEqual([]); // not an engine's leg outcome
    // Nothing held against the engine: the breaker does not count the gateway's own exceptions.
    expect(outcomeOf(new TypeError('boom'))).toBe('neutral');
    await engine.stop();
  });

  it('retries a retryable failure through the pipeline and notes it for usage.notes', async () => {
    let n = 0;
    const { engine, transport, fed, ctx } = await setup(() =>
      n++ === 0 ? Promise.reject(new UpstreamError('timeout', 'slow')) : Promise.resolve({ hits: [] }),
    );
    const scope = legScope(ctx, fed);
    expect(await runLeg(scope, engine, 'retrieve', {})).toMatchObject({ ok: true });
    expect(transport.sent.filter((s) => s.method === 'retrieve')).toHaveLength(2);
    expect(scope.notes).toEqual([expect.stringMatching(/^engine e1: retried once after -32014/)]);
    await engine.stop();
  });
});
