/**
 * The fan-out's join (`fanout`, src/core/federation/fanout.ts): a count of legs still out, settled
 * by the last one to finish, in place of Promise.all. It must wait for every leg whatever order
 * they finish in, reject when recording a leg faults (as Promise.all did), and never leave a
 * rejection nobody handles when the caller's `paramsFor` throws after some legs were sent.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigSchema } from '../../src/core/config/schema.js';
import type { FederationContext } from '../../src/core/federation/context.js';
import { fanout, type FanoutPlan } from '../../src/core/federation/fanout.js';
import type { JsonObject } from '../../src/core/protocol/jsonrpc.js';
import { RetryBudget } from '../../src/core/resilience/retry.js';
import { Engine } from '../../src/core/upstream/engine.js';
import { testCallContext } from '../support/call-context.js';
import { deferred, FakeTransport, silent, type Deferred } from './upstream-fakes.js';

const INIT = { protocolVersion: 1, server: { name: 'fake' }, capabilities: { retrieve: {} } };

interface Rig {
  engines: Engine[];
  /** Each engine's pending answers, in the order its calls arrived. */
  answers: Array<Array<Deferred<JsonObject>>>;
  fed: FederationContext;
}

const engines: Engine[] = [];
afterEach(async () => {
  await Promise.all(engines.splice(0).map((engine) => engine.stop()));
});

async function rig(count: number): Promise<Rig> {
  const config = ConfigSchema.parse({
    engines: Array.from({ length: count }, (_, i) => ({ id: `e${i}`, transport: 'http', url: `http://127.0.0.1:1/e${i}` })),
    gateway: { name: 'gw', retry: { backoffMs: 0 } },
  });
  const answers: Rig['answers'] = [];
  const list = config.engines.map((entry, i) => {
    answers.push([]);
    const transport = new FakeTransport((sent) => {
      if (sent.method === 'initialize') return Promise.resolve(INIT);
      const answer = deferred<JsonObject>();
      answers[i]!.push(answer);
      return answer.promise;
    });
    return new Engine(entry, config.gateway, { logger: silent, transports: () => transport });
  });
  engines.push(...list);
  await Promise.all(list.map((engine) => engine.start()));
  const fed: FederationContext = {
    engines: list,
    settings: config.gateway,
    logger: silent,
    identity: 'gw',
    hooks: {},
    retryBudget: new RetryBudget(config.gateway.retry),
  };
  return { engines: list, answers, fed };
}

function plan(list: readonly Engine[], over: Partial<FanoutPlan> = {}): FanoutPlan {
  return { method: 'retrieve', engines: list, paramsFor: () => ({ query: 'q' }), ...over };
}

/** Settles once every pending microtask and the timers due now have run. */
const turn = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 0));

describe('fan-out join', () => {
  it('waits for the last leg whatever order the legs finish in, and records each once', async () => {
    const { engines: list, answers, fed } = await rig(3);
    let settled = false;
    const outcome = fanout(plan(list), testCallContext(), fed).then((done) => {
      settled = true;
      return done;
    });
    await turn();
    expect(answers.map((calls) => calls.length)).toEqual([1, 1, 1]);
    answers[2]![0]!.resolve({ hits: [{ id: 'c', score: 1 }] });
    answers[0]![0]!.resolve({ hits: [{ id: 'a', score: 1 }] });
    await turn();
    expect(settled).toBe(false); // e1 is still out
    answers[1]![0]!.reject(new Error('a fault of the transport, not an engine answer'));
    const done = await outcome.catch((err: unknown) => err);
    // A non-UpstreamError from the transport is the gateway's own fault: the fan-out rejects (-32603).
    expect(done).toMatchObject({ code: -32603 });

    const again = await rig(3);
    const second = fanout(plan(again.engines), testCallContext(), again.fed);
    await turn();
    for (const i of [1, 2, 0]) again.answers[i]![0]!.resolve({ hits: [{ id: `d${i}`, score: 1 }] });
    const result = await second;
    expect(result.failures).toEqual([]);
    expect(result.successes.map((s) => s.engine.id)).toEqual(['e1', 'e2', 'e0']);
  });

  it('rejects with the fault when recording a leg throws (a hook of the caller), as Promise.all did', async () => {
    const { engines: list, answers, fed } = await rig(2);
    const boom = new Error('hook fault');
    const outcome = fanout(
      plan(list, {
        onLegDone: (engine) => {
          if (engine.id === 'e0') throw boom;
        },
      }),
      testCallContext(),
      fed,
    );
    await turn();
    answers[0]![0]!.resolve({ hits: [] });
    await expect(outcome).rejects.toBe(boom);
    answers[1]![0]!.resolve({ hits: [] }); // the other leg still finishes; nothing more happens
    await turn();
  });

  it("rejects when the caller's paramsFor throws, and a sent leg's later fault is not an unhandled rejection", async () => {
    const { engines: list, answers, fed } = await rig(2);
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown): void => {
      unhandled.push(reason);
    };
    process.on('unhandledRejection', onUnhandled);
    try {
      const bad = new Error('params fault');
      const outcome = fanout(
        plan(list, {
          paramsFor: (engine) => {
            if (engine.id === 'e1') throw bad;
            return { query: 'q' };
          },
        }),
        testCallContext(),
        fed,
      );
      await expect(outcome).rejects.toBe(bad);
      await turn();
      expect(answers[0]).toHaveLength(1); // e0's leg was sent before e1's params threw
      answers[0]![0]!.reject(new TypeError('a fault of the gateway after the fan-out gave up'));
      await turn();
      await turn();
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });

  it('settles at once, with every engine failed, when no leg can be sent', async () => {
    const { engines: list, fed } = await rig(2);
    const outcome = await fanout(plan(list), testCallContext({}, 0), fed);
    expect(outcome.successes).toEqual([]);
    expect(outcome.failures.map((f) => [f.engine, f.reason])).toEqual([
      ['e0', 'timeout'],
      ['e1', 'timeout'],
    ]);
  });
});
