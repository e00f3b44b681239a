/**
 * The observed service passes a plain call's context through unchanged, wraps it only to count
 * progress frames, and keeps the in-flight gauge balanced however the call ends — including a
 * service that throws instead of rejecting.
 */
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { testCallContext } from '../support/call-context.js';
import type { CallContext, RcpService } from '../../src/core/service/contract.js';
import { GatewayMetrics } from '../../src/node/observability/metrics.js';
import { ObservedService } from '../../src/node/observability/observed-service.js';

function context(progress?: CallContext['progress']): CallContext {
  return testCallContext({ progress }, 1_000);
}

async function inFlight(metrics: GatewayMetrics): Promise<number> {
  const text = await metrics.registry.metrics();
  return Number(/^rcpgw_in_flight_requests (\S+)$/m.exec(text)?.[1]);
}

function observed(call: RcpService['call']): { service: ObservedService; metrics: GatewayMetrics; seen: CallContext[] } {
  const metrics = new GatewayMetrics({ processMetrics: false });
  const seen: CallContext[] = [];
  const inner: RcpService = {
    describe: () => ({}) as never,
    defaultDeadlineMs: 1_000,
    call: (method, params, ctx) => {
      seen.push(ctx);
      return call(method, params, ctx);
    },
  };
  const service = new ObservedService(inner, { metrics, logger: pino({ level: 'silent' }), logQueries: () => false });
  return { service, metrics, seen };
}

describe('observed service', () => {
  it('hands a plain call the very context it got, and counts it in and out', async () => {
    let release!: () => void;
    const { service, metrics, seen } = observed(() => new Promise((resolve) => (release = () => resolve({ hits: [] }))));
    const ctx = context();
    const answer = service.call('retrieve', { query: 'q' }, ctx);
    expect(seen[0]).toBe(ctx);
    expect(await inFlight(metrics)).toBe(1);
    release();
    await expect(answer).resolves.toEqual({ hits: [] });
    expect(await inFlight(metrics)).toBe(0);
  });

  it('wraps progress to count the frames, and passes them on', async () => {
    const frames: unknown[] = [];
    const { service, metrics, seen } = observed((_m, _p, ctx) => {
      ctx.progress?.({ progress: 0.5 });
      return Promise.resolve({});
    });
    const ctx = context((update) => frames.push(update));
    await service.call('retrieve', { query: 'q' }, ctx);
    expect(seen[0]).not.toBe(ctx);
    expect(seen[0]!.trace).toBe(ctx.trace);
    expect(frames).toEqual([{ progress: 0.5 }]);
    expect(await metrics.registry.metrics()).toMatch(/^rcpgw_progress_frames_total 1$/m);
  });

  it('answers a service that throws instead of rejecting with a rejection, and counts it out', async () => {
    const { service, metrics } = observed(() => {
      throw new Error('thrown, not rejected');
    });
    await expect(service.call('retrieve', { query: 'q' }, context())).rejects.toThrow('thrown, not rejected');
    expect(await inFlight(metrics)).toBe(0);
  });

  it('counts a rejected call out too', async () => {
    const { service, metrics } = observed(() => Promise.reject(new Error('engine down')));
    await expect(service.call('retrieve', { query: 'q' }, context())).rejects.toThrow('engine down');
    expect(await inFlight(metrics)).toBe(0);
  });
});
