/**
 * Resilience in-process on fake timers (§12.2, §13.1, §16.2): the breaker opens after its
 * minimum volume and is skipped at once, half-opens when its (jittered) reset has passed and not
 * before, lets one trial through, backs off per consecutive opening and honours an engine's
 * retryAfterMs; deadlines answer -32014 and end the upstream work, as a client cancel does; a full engine queue sheds
 * (-32011); an engine down at startup is brought up by supervision. Time moves only when a test
 * advances it, so nothing here waits on the wall clock.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { RcpError } from '../../src/core/protocol/errors.js';
import type { JsonObject } from '../../src/core/protocol/jsonrpc.js';
import { FakeEngine } from '../support/fake-engine.js';
import { startInProcess, type InProcessGateway, type InProcessOptions } from '../support/in-process.js';

interface RetrieveResult {
  hits: Array<{ meta: { engine: string } }>;
  _meta: { engines: string[]; degraded?: Array<{ engine: string; code: number; reason: string }> };
}

const RESET_MS = 1_000;
const VOLUME = 3;
const NO_RETRY = { budgetRatio: 0, minPerWindow: 0 };

let running: InProcessGateway | undefined;
beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(async () => {
  await running?.stop();
  running = undefined;
  vi.useRealTimers();
});

async function gatewayOver(engines: FakeEngine[], options: InProcessOptions = {}): Promise<InProcessGateway> {
  running = await startInProcess(engines, {
    ...options,
    gateway: {
      breaker: { volumeThreshold: VOLUME, errorThresholdPercentage: 50, resetTimeoutMs: RESET_MS, maxResetTimeoutMs: 60_000 },
      retry: NO_RETRY,
      ...options.gateway,
    },
  });
  return running;
}

const retrieveFrom = async (gw: InProcessGateway, engines: string[], extra: JsonObject = {}): Promise<RetrieveResult> =>
  (await gw.call('retrieve', { query: 'q', k: 3, _meta: { 'x-rcpgw': { engines } }, ...extra })) as unknown as RetrieveResult;

async function breaker(
  gw: InProcessGateway,
  engine: string,
): Promise<{ breaker: string; breakerOpenings: number; breakerRetryInMs?: number }> {
  return (await gw.catalog()).get(engine)!._meta as { breaker: string; breakerOpenings: number; breakerRetryInMs?: number };
}

async function openBreaker(gw: InProcessGateway, engine: string): Promise<void> {
  for (let i = 0; i < VOLUME; i++) {
    expect((await breaker(gw, engine)).breaker).toBe('closed');
    const result = await retrieveFrom(gw, ['ok', engine]);
    expect(result._meta.degraded).toEqual([expect.objectContaining({ engine, reason: 'engine-error' })]);
  }
  expect((await breaker(gw, engine)).breaker).toBe('open');
}

describe('circuit breaker', () => {
  it('opens once the minimum volume of failures is reached, then the engine is not even asked', async () => {
    const flappy = new FakeEngine('flappy').fail(-32603);
    const gw = await gatewayOver([new FakeEngine('ok'), flappy]);
    await openBreaker(gw, 'flappy');
    const skipped = await retrieveFrom(gw, ['ok', 'flappy']);
    expect(skipped._meta.degraded).toEqual([expect.objectContaining({ engine: 'flappy', reason: 'circuit-open', code: -32010 })]);
    expect(skipped.hits.every((hit) => hit.meta.engine === 'ok')).toBe(true);
    expect(flappy.callsOf('retrieve')).toHaveLength(VOLUME);
  });

  it('half-opens only after the jittered reset (±20 %), lets exactly one trial through, and closes on its success', async () => {
    const flappy = new FakeEngine('flappy').fail(-32603);
    const gw = await gatewayOver([new FakeEngine('ok'), flappy]);
    await openBreaker(gw, 'flappy');
    await vi.advanceTimersByTimeAsync(RESET_MS * 0.8 - 1);
    expect((await breaker(gw, 'flappy')).breaker).toBe('open');
    await vi.advanceTimersByTimeAsync(RESET_MS * 0.4 + 2);
    expect((await breaker(gw, 'flappy')).breaker).toBe('half-open');

    flappy.heal().behave({ delayMs: 100 });
    const before = flappy.callsOf('retrieve').length;
    const answers = Promise.all([1, 2, 3].map(() => retrieveFrom(gw, ['ok', 'flappy'])));
    await vi.advanceTimersByTimeAsync(100);
    const results = await answers;
    expect(flappy.callsOf('retrieve')).toHaveLength(before + 1);
    expect(results.filter((r) => r.hits.some((hit) => hit.meta.engine === 'flappy'))).toHaveLength(1);
    expect(results.filter((r) => r._meta.degraded?.some((d) => d.reason === 'circuit-open'))).toHaveLength(2);
    expect(await breaker(gw, 'flappy')).toMatchObject({ breaker: 'closed', breakerOpenings: 0 });
  });

  it('a failed trial re-opens it for about twice as long', async () => {
    const flappy = new FakeEngine('flappy').fail(-32603);
    const transitions: string[] = [];
    const gw = await gatewayOver([new FakeEngine('ok'), flappy], {
      hooks: {
        onBreakerTransition: (engine, from, to) => {
          if (engine === 'flappy') transitions.push(`${from}>${to}`);
        },
      },
    });
    await openBreaker(gw, 'flappy');
    await vi.advanceTimersByTimeAsync(RESET_MS * 1.2 + 1);
    const trial = await retrieveFrom(gw, ['ok', 'flappy']);
    expect(trial._meta.degraded).toEqual([expect.objectContaining({ engine: 'flappy', reason: 'engine-error' })]);
    const reopened = await breaker(gw, 'flappy');
    expect(reopened).toMatchObject({ breaker: 'open', breakerOpenings: 2 });
    expect(reopened.breakerRetryInMs).toBeGreaterThanOrEqual(RESET_MS * 1.6 - 1);
    expect(reopened.breakerRetryInMs).toBeLessThanOrEqual(RESET_MS * 2.4 + 1);
    await vi.advanceTimersByTimeAsync(RESET_MS * 1.6 - 2);
    expect((await breaker(gw, 'flappy')).breaker).toBe('open');
    await vi.advanceTimersByTimeAsync(RESET_MS * 0.8 + 4);
    expect((await breaker(gw, 'flappy')).breaker).toBe('half-open');
    expect(transitions).toEqual(['closed>open', 'open>half-open', 'half-open>open', 'open>half-open']);
  });

  it("stays open at least as long as the engine's retryAfterMs asks", async () => {
    const limited = new FakeEngine('limited').fail(-32011, { retryAfterMs: 5_000 });
    const gw = await gatewayOver([new FakeEngine('ok'), limited]);
    for (let i = 0; i < VOLUME; i++) await retrieveFrom(gw, ['ok', 'limited']);
    expect((await breaker(gw, 'limited')).breaker).toBe('open');
    await vi.advanceTimersByTimeAsync(4_999);
    expect((await breaker(gw, 'limited')).breaker).toBe('open');
    await vi.advanceTimersByTimeAsync(2);
    expect((await breaker(gw, 'limited')).breaker).toBe('half-open');
  });
});

describe('deadlines', () => {
  it('answer -32014 when every leg ran out of time, and end the engine work on it', async () => {
    const hanging = new FakeEngine('hanging').hang();
    const gw = await gatewayOver([hanging]);
    let answered = false;
    const exchange = gw.request('retrieve', { query: 'q', k: 3, _meta: { deadlineMs: 500 } }).finally(() => {
      answered = true;
    });
    // The leg's budget is the deadline less deadlineReserveMs (50): it is given up at 450 ms.
    await vi.advanceTimersByTimeAsync(440);
    expect(answered).toBe(false);
    expect(hanging.callsOf('retrieve')[0]!.outcome).toBe('pending');
    await vi.advanceTimersByTimeAsync(60);
    expect(answered).toBe(true);
    const { response } = await exchange;
    expect(response).toMatchObject({ error: { code: -32014, data: { retryable: true, deadlineMs: 500 } } });
    // The engine's own Session ended its work at the forwarded, strictly smaller deadline (§16.2).
    expect(hanging.callsOf('retrieve')[0]).toMatchObject({ outcome: 'aborted', abortReason: 'deadline' });
  });

  it('a client cancel reaches the engine as notifications/cancel (§7.14)', async () => {
    const hanging = new FakeEngine('hanging').hang();
    const gw = await gatewayOver([hanging]);
    const client = new AbortController();
    const outcome = gw.call('retrieve', { query: 'q', k: 3 }, { signal: client.signal }).then(
      () => undefined,
      (e: unknown) => e,
    );
    await vi.advanceTimersByTimeAsync(100);
    client.abort();
    expect(await outcome).toMatchObject({ code: -32006 });
    expect(hanging.callsOf('retrieve')[0]).toMatchObject({ outcome: 'aborted', abortReason: 'cancel' });
  });

  it('answer a slow leg as degraded (deadline) while the fast engine is served', async () => {
    const gw = await gatewayOver([new FakeEngine('fast'), new FakeEngine('slow').behave({ delayMs: 10_000 })]);
    const answer = gw.call('retrieve', { query: 'q', k: 3, _meta: { deadlineMs: 300 } });
    await vi.advanceTimersByTimeAsync(300);
    const result = (await answer) as unknown as RetrieveResult;
    expect(result._meta.engines).toEqual(['fast']);
    expect(result._meta.degraded).toEqual([expect.objectContaining({ engine: 'slow', code: -32014 })]);
  });

  it('answer a routed call that runs out of time with -32014', async () => {
    const slow = new FakeEngine('slow', { capabilities: { rerank: {} } }).hang();
    const gw = await gatewayOver([slow]);
    const outcome = gw.call('rerank', { query: 'q', passages: ['a'], _meta: { deadlineMs: 200 } }).then(
      () => undefined,
      (e: unknown) => e,
    );
    await vi.advanceTimersByTimeAsync(200);
    const err = await outcome;
    expect(err).toBeInstanceOf(RcpError);
    expect((err as RcpError).code).toBe(-32014);
  });
});

describe('queue shedding', () => {
  it('sheds a call beyond maxConcurrent + maxQueue at once (-32011) and serves the queued one later', async () => {
    const busy = new FakeEngine('busy', { capabilities: { rerank: {} } }).behave({ delayMs: 1_000 });
    const shed: string[] = [];
    const gw = await gatewayOver([busy], {
      engines: { busy: { maxConcurrent: 1, maxQueue: 1 } },
      hooks: { onShed: (engine) => shed.push(engine) },
    });
    const call = (): Promise<unknown> =>
      gw.call('rerank', { query: 'q', passages: ['a'] }).then(
        (r) => r,
        (e: unknown) => e,
      );
    const [first, queued, third] = [call(), call(), call()];
    await vi.advanceTimersByTimeAsync(0);
    const refused = await third;
    expect(refused).toBeInstanceOf(RcpError);
    expect(refused).toMatchObject({ code: -32011, data: { reason: 'queue-full' } });
    expect(shed).toEqual(['busy']);
    expect(busy.callsOf('rerank')).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(2_000);
    expect(await first).toMatchObject({ _meta: { engine: 'busy' } });
    expect(await queued).toMatchObject({ _meta: { engine: 'busy' } });
    expect(busy.callsOf('rerank')).toHaveLength(2);
  });

  it('a queued call gives up at its deadline instead of waiting behind a hanging one', async () => {
    const stuck = new FakeEngine('stuck', { capabilities: { rerank: {} } }).hang();
    const gw = await gatewayOver([stuck], { engines: { stuck: { maxConcurrent: 1, maxQueue: 4 } } });
    const hangingCall = gw.call('rerank', { query: 'q', passages: ['a'], _meta: { deadlineMs: 5_000 } }).then(
      () => undefined,
      (e: unknown) => e,
    );
    const queued = gw.call('rerank', { query: 'q', passages: ['a'], _meta: { deadlineMs: 300 } }).then(
      () => undefined,
      (e: unknown) => e,
    );
    await vi.advanceTimersByTimeAsync(300);
    expect(await queued).toMatchObject({ code: -32014 });
    expect(stuck.callsOf('rerank')).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(5_000);
    expect(await hangingCall).toMatchObject({ code: -32014 });
  });
});

describe('supervision', () => {
  it('brings an engine that failed to initialize up in the background, with backoff', async () => {
    const late = new FakeEngine('late').failInitialize(-32603);
    const gw = await gatewayOver([new FakeEngine('ok'), late], { gateway: { restartDelayMs: 1_000, restartMaxDelayMs: 8_000 } });
    expect(((await breaker(gw, 'late')) as unknown as { status: string }).status).toBe('down');
    const degraded = await retrieveFrom(gw, ['ok', 'late']);
    expect(degraded._meta.degraded).toEqual([expect.objectContaining({ engine: 'late', reason: 'not-ready' })]);
    late.failInitialize(undefined);
    await vi.advanceTimersByTimeAsync(1_200); // first retry: 1 s ± 20 %
    expect((await gw.catalog()).get('late')!._meta.status).toBe('ready');
    expect((await retrieveFrom(gw, ['ok', 'late']))._meta.engines).toEqual(['late', 'ok']);
  });
});
