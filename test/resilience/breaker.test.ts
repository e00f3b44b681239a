/**
 * Circuit breakers through the running gateway (§12.2, §16.2): an engine flipped between healthy
 * and failing through its --control file, one that refuses connections and comes back, and one
 * that rate-limits with a Retry-After. The breaker opens only after the minimum volume, an open
 * engine is skipped at once (noted, `_meta.degraded` reason `circuit-open`) while the healthy
 * engine still answers, half-open lets exactly one trial through, recovery closes it, the reset
 * timeout grows per consecutive opening and honours the engine's hint, and every transition is
 * visible in `catalog/list` and in the log. Retries are off here so request counts are exact.
 *
 * The open windows are real time here, so they are wide (≥ 0.8 s, capped at 1.6 s) for the calls
 * that must land while a breaker is open even on a busy machine; how long each opening lasts is
 * read from the transition log (deterministic), not from a clock. test/inprocess/resilience
 * checks the same timing exactly, on fake timers.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import path from 'node:path';
import { startGateway, startHttpEngine, tmpDir, writeControl, type EngineHandle, type GatewayHandle } from '../support/processes.js';
import { emittedErrors, schemaCrossCheck, schemaCrossCheckBanner } from '../support/spec-validator.js';
import { breakerState, catalog, expectHealthyAnswer, notesOf, requestsSeen, retrieve, waitUntil } from './helpers.js';

const VOLUME = 4;
const RESET_MS = 1_000;
/** The flapping engines' cap: a second opening lasts 1.28-1.6 s, always longer than a first can (1.2 s). */
const MAX_RESET_MS = 1_600;
const FLAPPING_BREAKER = { resetTimeoutMs: RESET_MS, maxResetTimeoutMs: MAX_RESET_MS };
let ok: EngineHandle;
let flappy: EngineHandle;
let refusing: EngineHandle;
let limited: EngineHandle;
let gateway: GatewayHandle;
let control: string;

beforeAll(async () => {
  control = path.join(tmpDir('rcp-breaker-'), 'control.json');
  writeControl(control, { fault: 'ok' });
  [ok, flappy, refusing, limited] = await Promise.all([
    startHttpEngine(['--id', 'ok', '--id-prefix', 'ok-']),
    startHttpEngine(['--id', 'flappy', '--id-prefix', 'f-', '--control', control]),
    startHttpEngine(['--id', 'refusing', '--id-prefix', 'r-']),
    startHttpEngine(['--id', 'limited', '--fault', 'rate-limit', '--retry-after-ms', '3000']),
  ]);
  gateway = await startGateway({
    config: {
      engines: [
        { id: 'ok', transport: 'http', url: ok.url },
        { id: 'flappy', transport: 'http', url: flappy.url, breaker: FLAPPING_BREAKER },
        { id: 'refusing', transport: 'http', url: refusing.url, breaker: FLAPPING_BREAKER },
        { id: 'limited', transport: 'http', url: limited.url },
      ],
      gateway: {
        deadlineMs: 3_000,
        logLevel: 'info',
        breaker: { volumeThreshold: VOLUME, errorThresholdPercentage: 50, resetTimeoutMs: 300, maxResetTimeoutMs: 10_000 },
        retry: { budgetRatio: 0, minPerWindow: 0, windowMs: 10_000 },
      },
    },
  });
});

afterAll(async () => {
  expect(await gateway.stop()).toBe(0);
  await Promise.all([ok?.stop(), flappy?.stop(), refusing?.stop(), limited?.stop()]);
  console.log(schemaCrossCheckBanner());
  expect(emittedErrors()).toEqual([]);
});

interface Transition {
  engine: string;
  from: string;
  to: string;
  resetTimeoutMs?: number;
  openings?: number;
}

/** The gateway's `circuit breaker transition` log lines for `engine`, in order. */
function transitionsOf(engine: string): Transition[] {
  return gateway
    .stderr()
    .split('\n')
    .filter((line) => line.includes('circuit breaker transition'))
    .map((line) => JSON.parse(line) as Transition)
    .filter((t) => t.engine === engine);
}

async function failUntilOpen(engine: string, expectedReason: string): Promise<void> {
  for (let i = 1; i <= VOLUME; i++) {
    expect(await breakerState(gateway.url, engine)).toBe('closed');
    const result = expectHealthyAnswer(await retrieve(gateway.url, { engines: ['ok', engine] }), 3_000, 'ok');
    expect(result._meta.degraded).toEqual([expect.objectContaining({ engine, reason: expectedReason })]);
  }
  expect(await breakerState(gateway.url, engine)).toBe('open');
}

describe('a flapping engine', () => {
  it('opens only once the minimum volume of failures is reached, then is skipped at once', async () => {
    writeControl(control, { fault: 'fail' });
    await failUntilOpen('flappy', 'engine-error');
    expect(requestsSeen(flappy.eventsFile)).toBe(VOLUME);
    const skipped = expectHealthyAnswer(await retrieve(gateway.url, { engines: ['ok', 'flappy'] }), 3_000, 'ok');
    expect(skipped._meta.degraded).toEqual([expect.objectContaining({ engine: 'flappy', reason: 'circuit-open', code: -32010 })]);
    expect(notesOf(skipped)).toContain('engine flappy dropped: circuit-open (-32010)');
    expect(requestsSeen(flappy.eventsFile)).toBe(VOLUME); // not even asked
  });

  it('half-open lets exactly one trial through; its success closes the breaker', async () => {
    writeControl(control, { fault: 'slow', delayMs: 600 });
    await waitUntil('flappy half-open', async () => (await breakerState(gateway.url, 'flappy')) === 'half-open');
    const before = requestsSeen(flappy.eventsFile);
    const answers = await Promise.all([1, 2, 3].map(() => retrieve(gateway.url, { engines: ['ok', 'flappy'] })));
    expect(requestsSeen(flappy.eventsFile)).toBe(before + 1);
    const results = answers.map((res) => expectHealthyAnswer(res, 3_000, 'ok'));
    const trial = results.filter((r) => r.hits.some((h) => h.meta.engine === 'flappy'));
    const refused = results.filter((r) => r._meta.degraded?.some((d) => d.engine === 'flappy' && d.reason === 'circuit-open'));
    expect(trial).toHaveLength(1);
    expect(refused).toHaveLength(2);
    expect(await breakerState(gateway.url, 'flappy')).toBe('closed');
    expect((await catalog(gateway.url)).get('flappy')!._meta.breakerOpenings).toBe(0);
  });

  it('a failed trial re-opens it for longer (consecutive openings back off)', async () => {
    writeControl(control, { fault: 'fail' });
    await failUntilOpen('flappy', 'engine-error');
    expect((await catalog(gateway.url)).get('flappy')!._meta.breakerOpenings).toBe(1);
    await waitUntil('flappy half-open', async () => (await breakerState(gateway.url, 'flappy')) === 'half-open');
    const trial = expectHealthyAnswer(await retrieve(gateway.url, { engines: ['ok', 'flappy'] }), 3_000, 'ok');
    expect(trial._meta.degraded).toEqual([expect.objectContaining({ engine: 'flappy', reason: 'engine-error' })]);
    const entry = (await catalog(gateway.url)).get('flappy')!;
    expect(entry._meta.breaker).toBe('open');
    expect(entry._meta.breakerOpenings).toBe(2);
    // The second opening lasts 2 × resetTimeoutMs ±20 % (capped): more than one first opening can (1.2 ×).
    const second = await waitUntil('the second opening in the log', () => transitionsOf('flappy').filter((t) => t.to === 'open')[2]);
    expect(second.openings).toBe(2);
    expect(second.resetTimeoutMs).toBeGreaterThan(RESET_MS * 1.2);
    expect(second.resetTimeoutMs).toBeLessThanOrEqual(MAX_RESET_MS);
    writeControl(control, { fault: 'ok' });
    await waitUntil('flappy half-open', async () => (await breakerState(gateway.url, 'flappy')) === 'half-open');
    const recovered = expectHealthyAnswer(await retrieve(gateway.url, { engines: ['ok', 'flappy'] }), 3_000, 'ok');
    expect(recovered.hits.some((h) => h.meta.engine === 'flappy')).toBe(true);
    expect(await breakerState(gateway.url, 'flappy')).toBe('closed');
  });

  it('logs every transition', async () => {
    const transitions = transitionsOf('flappy').map((t) => `${t.from}>${t.to}`);
    expect(transitions).toEqual([
      'closed>open',
      'open>half-open',
      'half-open>closed',
      'closed>open',
      'open>half-open',
      'half-open>open',
      'open>half-open',
      'half-open>closed',
    ]);
  });
});

describe('an engine that refuses connections', () => {
  it('opens its breaker, and closes it once the engine is back', async () => {
    const port = refusing.port;
    await refusing.stop();
    await failUntilOpen('refusing', 'transport');
    refusing = await startHttpEngine(['--id', 'refusing', '--id-prefix', 'r-', '--port', String(port)]);
    await waitUntil('refusing half-open', async () => (await breakerState(gateway.url, 'refusing')) === 'half-open');
    const back = expectHealthyAnswer(await retrieve(gateway.url, { engines: ['ok', 'refusing'] }), 3_000, 'ok');
    expect(back.hits.some((h) => h.meta.engine === 'refusing')).toBe(true);
    expect(await breakerState(gateway.url, 'refusing')).toBe('closed');
  });
});

describe('an engine that rate-limits with Retry-After', () => {
  it('keeps the breaker open at least as long as the engine asked', async () => {
    await failUntilOpen('limited', 'engine-error');
    const entry = (await catalog(gateway.url)).get('limited')!;
    // resetTimeoutMs is 300 ms, but the engine said retryAfterMs 3000.
    expect(entry._meta.breakerRetryInMs).toBeGreaterThan(2_000);
  });
});

schemaCrossCheck();
