/**
 * Fault injection, one misbehaving engine at a time, over both upstream transports: a healthy
 * HTTP engine `ok` and a misbehaving engine (`bad-http` over HTTP, `bad-stdio` over stdio) whose
 * fault is switched through its --control file. For every fault mode: the request is answered
 * exactly once, within the deadline the gateway reports, with the healthy engine's hits; the bad
 * engine's contribution is dropped (with a `_meta.degraded` entry) or sanitized (with a note);
 * nothing invalid reaches the client (every frame goes through the spec validator). An engine
 * failing at a rate contributes exactly when it answered. At the end no engine process the
 * gateway started outlives it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import path from 'node:path';
import {
  readEvents,
  startGateway,
  startHttpEngine,
  stdioEngineCommand,
  tmpDir,
  waitForEvent,
  writeControl,
  type EngineHandle,
  type GatewayHandle,
} from '../support/processes.js';
import { emittedErrors, schemaCrossCheck, schemaCrossCheckBanner } from '../support/spec-validator.js';
import { catalog, enginePids, expectAllGone, expectHealthyAnswer, notesOf, retrieve, waitUntil } from './helpers.js';

type Expectation =
  { kind: 'clean' } | { kind: 'sanitized'; note: RegExp } | { kind: 'dropped'; reason: string; code: number; note?: RegExp };

interface FaultCase {
  mode: string;
  control?: Record<string, unknown>;
  http: Expectation;
  stdio: Expectation;
}

const clean: Expectation = { kind: 'clean' };
const dropped = (reason: string, code: number, note?: RegExp): Expectation => ({
  kind: 'dropped',
  reason,
  code,
  ...(note ? { note } : {}),
});
const sanitized = (note: RegExp): Expectation => ({ kind: 'sanitized', note });

const MATRIX: FaultCase[] = [
  { mode: 'ok', http: clean, stdio: clean },
  { mode: 'slow', control: { delayMs: 100 }, http: clean, stdio: clean },
  { mode: 'hang', http: dropped('timeout', -32014), stdio: dropped('timeout', -32014) },
  {
    mode: 'fail',
    http: dropped('engine-error', -32603, /retried once after -32603/),
    stdio: dropped('engine-error', -32603, /retried once after -32603/),
  },
  {
    mode: 'rate-limit',
    control: { retryAfterMs: 50 },
    http: dropped('engine-error', -32011, /retried once after -32011 \(waited 50 ms\)/),
    stdio: dropped('engine-error', -32011, /retried once after -32011 \(waited 50 ms\)/),
  },
  { mode: 'cancelled', http: dropped('engine-cancelled', -32010), stdio: dropped('engine-cancelled', -32010) },
  { mode: 'garbage', http: dropped('malformed', -32603), stdio: dropped('malformed', -32603) },
  { mode: 'hits-not-array', http: dropped('malformed', -32603), stdio: dropped('malformed', -32603) },
  { mode: 'hits-without-ids', http: sanitized(/without a valid id dropped/), stdio: sanitized(/without a valid id dropped/) },
  { mode: 'wrong-id-type', http: sanitized(/without a valid id dropped/), stdio: sanitized(/without a valid id dropped/) },
  { mode: 'nonnumeric-scores', http: sanitized(/non-numeric score dropped/), stdio: sanitized(/non-numeric score dropped/) },
  { mode: 'nan-score', http: sanitized(/non-numeric score dropped/), stdio: sanitized(/non-numeric score dropped/) },
  { mode: 'duplicate-ids', http: sanitized(/duplicate hit id\(s\) dropped/), stdio: sanitized(/duplicate hit id\(s\) dropped/) },
  {
    mode: 'too-many-hits',
    http: sanitized(/answered 24 hits for 8 asked; extra hits cut/),
    stdio: sanitized(/answered 24 hits for 8 asked; extra hits cut/),
  },
  { mode: 'huge', control: { hugeBytes: 200_000 }, http: dropped('too-large', -32603), stdio: dropped('too-large', -32603) },
  // A response with an id we never sent: over HTTP it is the answer to our request, and wrong;
  // over stdio it cannot be matched to any call, so the call runs into its deadline.
  { mode: 'unknown-id', http: dropped('malformed', -32603), stdio: dropped('timeout', -32014) },
  // Last: over stdio the engine dies half-way through its answer (it is restarted).
  { mode: 'close-mid-answer', http: dropped('transport', -32010), stdio: dropped('crashed', -32010) },
];

const DEADLINE_MS = 800;
let ok: EngineHandle;
let badHttp: EngineHandle;
let gateway: GatewayHandle;
let httpControl: string;
let stdioControl: string;
let stdioEvents: string;

beforeAll(async () => {
  const dir = tmpDir('rcp-faults-');
  httpControl = path.join(dir, 'http-control.json');
  stdioControl = path.join(dir, 'stdio-control.json');
  stdioEvents = path.join(dir, 'stdio-events.ndjson');
  writeControl(httpControl, { fault: 'ok' });
  writeControl(stdioControl, { fault: 'ok' });
  [ok, badHttp] = await Promise.all([
    startHttpEngine(['--id', 'ok', '--id-prefix', 'ok-']),
    startHttpEngine(['--id', 'bad-http', '--id-prefix', 'h-', '--control', httpControl]),
  ]);
  // A breaker that never opens here: this file is about each answer; breakers have their own.
  const breaker = { volumeThreshold: 1_000_000 };
  gateway = await startGateway({
    config: {
      engines: [
        { id: 'ok', transport: 'http', url: ok.url },
        { id: 'bad-http', transport: 'http', url: badHttp.url, maxResponseBytes: 65_536, breaker },
        {
          id: 'bad-stdio',
          transport: 'stdio',
          maxResponseBytes: 65_536,
          breaker,
          command: stdioEngineCommand(['--id', 'bad-stdio', '--id-prefix', 's-', '--control', stdioControl, '--events', stdioEvents]),
        },
      ],
      // fusionDepth 8: each engine is asked for 8 hits (the too-many-hits engine answers 3 × 8).
      gateway: { deadlineMs: 5_000, engineTimeoutMs: 5_000, logLevel: 'warn', fusionDepth: 8 },
    },
  });
});

afterAll(async () => {
  const pids = enginePids(stdioEvents);
  expect(await gateway.stop()).toBe(0);
  await expectAllGone(pids);
  await Promise.all([ok?.stop(), badHttp?.stop()]);
  console.log(schemaCrossCheckBanner());
  expect(emittedErrors()).toEqual([]);
});

for (const transport of ['http', 'stdio'] as const) {
  describe(`a misbehaving ${transport} engine`, () => {
    const bad = `bad-${transport}`;
    for (const fault of MATRIX) {
      const expectation = fault[transport];
      it(`${fault.mode}: ${expectation.kind === 'dropped' ? `dropped as ${expectation.reason}` : expectation.kind}`, async () => {
        writeControl(transport === 'http' ? httpControl : stdioControl, { fault: fault.mode, ...fault.control });
        // The stdio engine may be restarting after the previous case: wait until it is back.
        await waitUntil(`${bad} ready`, async () => (await catalog(gateway.url)).get(bad)?._meta.status === 'ready');
        const res = await retrieve(gateway.url, { deadlineMs: DEADLINE_MS, engines: ['ok', bad] });
        const result = expectHealthyAnswer(res, DEADLINE_MS, 'ok');
        const degraded = (result._meta.degraded ?? []).filter((d) => d.engine === bad);
        const notes = notesOf(result);
        switch (expectation.kind) {
          case 'clean':
            expect(degraded).toEqual([]);
            expect(result._meta.engines.sort()).toEqual([bad, 'ok'].sort());
            expect(result.hits.some((h) => h.meta.engine === bad)).toBe(true);
            break;
          case 'sanitized':
            expect(degraded).toEqual([]);
            expect(notes).toMatch(new RegExp(`engine ${bad}: .*${expectation.note.source}`));
            break;
          case 'dropped':
            expect(degraded).toEqual([expect.objectContaining({ reason: expectation.reason, code: expectation.code })]);
            expect(result.hits.every((h) => h.meta.engine !== bad)).toBe(true);
            expect(notes).toContain(`engine ${bad} dropped: ${expectation.reason} (${expectation.code})`);
            if (expectation.note) expect(notes).toMatch(expectation.note);
            break;
        }
        for (const hit of result.hits) {
          expect(typeof hit.id === 'string' || Number.isFinite(hit.id)).toBe(true);
          expect(Number.isFinite(hit.score)).toBe(true);
        }
      });
    }
  });
}

describe('an engine failing at a rate', () => {
  it('each answer either carries its hits or says it was dropped; the healthy engine always answers', async () => {
    writeControl(httpControl, { fault: 'fail', failRate: 0.5 });
    let contributed = 0;
    let droppedCount = 0;
    for (let i = 0; i < 12; i++) {
      const result = expectHealthyAnswer(
        await retrieve(gateway.url, { deadlineMs: DEADLINE_MS, engines: ['ok', 'bad-http'] }),
        DEADLINE_MS,
        'ok',
      );
      const hasHits = result.hits.some((h) => h.meta.engine === 'bad-http');
      const wasDropped = (result._meta.degraded ?? []).some((d) => d.engine === 'bad-http' && d.code === -32603);
      expect(hasHits !== wasDropped).toBe(true);
      if (hasHits) contributed++;
      else droppedCount++;
    }
    expect(contributed).toBeGreaterThan(0);
    expect(droppedCount).toBeGreaterThan(0);
  });
});

describe('an expired leg is aborted upstream', () => {
  it('over HTTP the socket is aborted (undici signal)', async () => {
    writeControl(httpControl, { fault: 'hang' });
    const before = readEvents(badHttp.eventsFile).filter((e) => e.ev === 'abort').length;
    const res = await retrieve(gateway.url, { deadlineMs: 300, engines: ['ok', 'bad-http'] });
    expectHealthyAnswer(res, 300, 'ok');
    await waitForEvent(
      badHttp.eventsFile,
      (e) => e.ev === 'abort' && readEvents(badHttp.eventsFile).filter((x) => x.ev === 'abort').length > before,
    );
  });

  it('over stdio the engine gets notifications/cancel with the upstream id', async () => {
    writeControl(stdioControl, { fault: 'hang' });
    await waitUntil('bad-stdio ready', async () => (await catalog(gateway.url)).get('bad-stdio')?._meta.status === 'ready');
    const seen = readEvents(stdioEvents).length;
    const res = await retrieve(gateway.url, { deadlineMs: 300, engines: ['ok', 'bad-stdio'] });
    expectHealthyAnswer(res, 300, 'ok');
    // The answer came at the deadline, not from the stdio engine, which may read (and log) the request only after it.
    const request = await waitUntil('the stdio engine to log the request', () =>
      readEvents(stdioEvents)
        .slice(seen)
        .find((e) => e.ev === 'request' && e.method === 'retrieve'),
    );
    await waitForEvent(stdioEvents, (e) => e.ev === 'cancel' && e.id === request.id && e.known === true);
  });

  it('nothing answered by the deadline is -32014, with the deadline the gateway used', async () => {
    writeControl(httpControl, { fault: 'hang' });
    writeControl(stdioControl, { fault: 'hang' });
    const res = await retrieve(gateway.url, { deadlineMs: 300, engines: ['bad-http', 'bad-stdio'] });
    expect(res.error?.code).toBe(-32014);
    expect(res.error?.data).toMatchObject({ deadlineMs: 300, retryable: true });
  });
});

schemaCrossCheck();
