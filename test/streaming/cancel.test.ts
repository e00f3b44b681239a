/**
 * Cancellation and progress over stdio (§5.1, §7.14, §9, §17.1): a client speaking NDJSON to
 * `rcp-gateway stdio`, in front of an HTTP and a stdio test engine. A cancel reaches only the
 * legs still running (HTTP by abort, stdio by `notifications/cancel` carrying the id the gateway
 * used upstream); the client gets exactly one answer; upstream ids and tokens never reach it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  readEvents,
  startHttpEngine,
  stdioEngineCommand,
  tmpDir,
  waitForEvent,
  writeControl,
  type EngineEvent,
  type EngineHandle,
} from '../support/processes.js';
import { emittedErrors, schemaCrossCheck, schemaCrossCheckBanner } from '../support/spec-validator.js';
import type { StdioClient } from '../support/stdio-client.js';
import { cleanups, runCleanups, startStdioGateway } from './helpers.js';

interface RetrieveResult {
  hits: Array<{ id: string }>;
  _meta: { engines: string[]; degraded?: Array<{ engine: string; reason: string }> };
}

const dir = tmpDir('rcp-cancel-');
const controls = { h: `${dir}/h.json`, s: `${dir}/s.json` };
const sEvents = `${dir}/s-events.ndjson`;
const LOG_CAPS = JSON.stringify({ retrieve: { maxK: 50, modes: ['sparse'] }, streaming: {}, log: {} });
let h: EngineHandle;
let client: StdioClient;

function behave(overrides: Partial<Record<'h' | 's', Record<string, unknown>>> = {}): void {
  for (const id of ['h', 's'] as const)
    writeControl(controls[id], { fault: 'ok', progressFrames: 2, progressIntervalMs: 0, ...overrides[id] });
}

function requestOf(file: string, query: string): Promise<EngineEvent> {
  return waitForEvent(file, (e) => e.ev === 'request' && e.method === 'retrieve' && e.params?.query === query);
}

function retrieve(query: string, meta: Record<string, unknown> = {}): Record<string, unknown> {
  return { query, k: 4, _meta: { 'x-rcpgw': { engines: ['h', 's'] }, ...meta } };
}

/** A ping round trip: everything the gateway wrote before its answer has been read. */
async function settle(): Promise<void> {
  const pong = await client.request('ping', { nonce: 'settle' });
  expect(pong.result).toEqual({ nonce: 'settle' });
}

/**
 * A retrieve answered by engine s alone. s reads its stdin in order and logs a cancel as it reads
 * it, so once this is answered, any cancel the gateway wrote to s while handling an earlier client
 * message is in s's log: a check that s got no cancel is settled, not early.
 */
async function throughS(): Promise<void> {
  const reply = await client.request<RetrieveResult>('retrieve', {
    query: 'retrieval barrier',
    k: 1,
    _meta: { 'x-rcpgw': { engines: ['s'] } },
  });
  expect(reply.result?._meta.engines).toEqual(['s']);
}

function responsesFor(id: string | number): unknown[] {
  return client.messages.filter((m) => m.id === id && ('result' in m || 'error' in m));
}

beforeAll(async () => {
  behave();
  h = await startHttpEngine(['--id', 'h', '--control', controls.h]);
  cleanups.push(() => h.stop());
  client = await startStdioGateway({
    engines: [
      { id: 'h', transport: 'http', url: h.url },
      { id: 's', transport: 'stdio', command: stdioEngineCommand(['--id', 's', '--events', sEvents, '--control', controls.s]) },
    ],
    gateway: { progressFramesPerSecond: 1000 },
  });
});

afterAll(async () => {
  await runCleanups();
  expect(client.violations).toEqual([]);
  console.log(schemaCrossCheckBanner());
  expect(emittedErrors()).toEqual([]);
});

describe('notifications/cancel over stdio (§7.14)', () => {
  it('before any engine answered: -32006 once, the HTTP leg aborted, the stdio leg cancelled by its upstream id', async () => {
    behave({ h: { fault: 'hang' }, s: { fault: 'hang' } });
    const query = 'retrieval cancel before any';
    const pending = client.request('retrieve', retrieve(query, { progressToken: 'c1-token' }), 'c1');
    const hRequest = await requestOf(h.eventsFile, query);
    const sRequest = await requestOf(sEvents, query);
    client.notify('notifications/cancel', { id: 'c1', reason: 'user aborted' });
    const reply = await pending;
    expect(reply.id).toBe('c1');
    expect(reply.error?.code).toBe(-32006);
    await waitForEvent(h.eventsFile, (e) => e.ev === 'abort' && e.id === hRequest.id);
    const cancel = await waitForEvent(sEvents, (e) => e.ev === 'cancel' && e.id === sRequest.id);
    expect(cancel.known).toBe(true); // the id the engine saw on the request, not the client's
    await settle();
    expect(responsesFor('c1')).toHaveLength(1);
    const index = client.messages.findIndex((m) => m.id === 'c1');
    const late = client.messages
      .slice(index + 1)
      .filter((m) => m.method === 'notifications/progress' && (m.params as Record<string, unknown>).progressToken === 'c1-token');
    expect(late).toEqual([]); // nothing after the final response (§9)
  });

  it.each([
    { answered: 'h' as const, live: 's' as const },
    { answered: 's' as const, live: 'h' as const },
  ])('after engine $answered answered: only the live leg ($live) is cancelled', async ({ answered, live }) => {
    behave({ [live]: { fault: 'hang' } });
    const query = `retrieval cancel after ${answered}`;
    const id = `after-${answered}`;
    const files = { h: h.eventsFile, s: sEvents };
    const pending = client.request('retrieve', retrieve(query), id);
    const answeredRequest = await requestOf(files[answered], query);
    await waitForEvent(files[answered], (e) => e.ev === 'response' && e.id === answeredRequest.id);
    const liveRequest = await requestOf(files[live], query);
    // s logs its answer as it writes it, before the gateway has read it: a cancel sent in that gap
    // would rightly go to s too. s's stdout is read in order, so a round trip through s first means
    // the gateway has taken in s's answer, and "s answered" holds for the gateway as well.
    if (answered === 's') await throughS();
    client.notify('notifications/cancel', { id });
    const reply = await pending;
    expect(reply.error?.code).toBe(-32006);
    if (live === 's') {
      const cancel = await waitForEvent(sEvents, (e) => e.ev === 'cancel' && e.id === liveRequest.id);
      expect(cancel.known).toBe(true);
    } else {
      await waitForEvent(h.eventsFile, (e) => e.ev === 'abort' && e.id === liveRequest.id);
    }
    await settle();
    // The leg that had answered was left alone. Over stdio, a wrong cancel would be written with the
    // live leg's abort but read by s on its own time: go through s before looking.
    if (answered === 's') await throughS();
    const untouched = readEvents(files[answered]).filter((e) => (e.ev === 'cancel' || e.ev === 'abort') && e.id === answeredRequest.id);
    expect(untouched).toEqual([]);
    expect(responsesFor(id)).toHaveLength(1);
  });

  it('after completion: the result stands, delivered once, and no engine hears of the cancel', async () => {
    behave();
    const query = 'retrieval cancel after completion';
    const reply = await client.request<RetrieveResult>('retrieve', retrieve(query), 'done-1');
    expect(reply.result?.hits.length).toBeGreaterThan(0);
    client.notify('notifications/cancel', { id: 'done-1' });
    await settle();
    expect(responsesFor('done-1')).toHaveLength(1);
    // A cancel wrongly passed on to s would be read by s on its own time: go through s before looking.
    // (Engine h cannot log an abort here: its HTTP exchange was complete before the client's cancel.)
    await throughS();
    const sRequest = readEvents(sEvents).find((e) => e.ev === 'request' && e.params?.query === query)!;
    expect(readEvents(sEvents).some((e) => e.ev === 'cancel' && e.id === sRequest.id)).toBe(false);
    const hRequest = readEvents(h.eventsFile).find((e) => e.ev === 'request' && e.params?.query === query)!;
    expect(readEvents(h.eventsFile).some((e) => e.ev === 'abort' && e.id === hRequest.id)).toBe(false);
  });

  it('ignores a cancel for an id that was never sent', async () => {
    client.notify('notifications/cancel', { id: 'never-sent' });
    client.notify('notifications/cancel', { id: 12345 });
    await settle();
    expect(responsesFor('never-sent')).toEqual([]);
    expect(responsesFor(12345)).toEqual([]);
  });

  it('the gateway deadline cancels the stdio leg still running, by its upstream id', async () => {
    behave({ s: { fault: 'hang' } });
    const query = 'retrieval deadline cancels';
    const reply = await client.request<RetrieveResult>('retrieve', retrieve(query, { deadlineMs: 400 }), 'deadline-1');
    expect(reply.result?._meta.engines).toEqual(['h']);
    expect(reply.result?._meta.degraded?.map((d) => d.engine)).toEqual(['s']);
    const sRequest = await requestOf(sEvents, query);
    const cancel = await waitForEvent(sEvents, (e) => e.ev === 'cancel' && e.id === sRequest.id);
    expect(cancel.known).toBe(true);
  });
});

describe('progress over stdio (§9)', () => {
  it('interleaves progress frames under the client token before the response, and none without a token', async () => {
    behave({ h: { progressFrames: 3 }, s: { progressFrames: 3 } });
    const reply = await client.request<RetrieveResult>('retrieve', retrieve('retrieval stdio progress', { progressToken: 99 }), 'p-1');
    expect(reply.result?.hits.length).toBeGreaterThan(0);
    const frames = client.progressFor(99);
    expect(frames.length).toBeGreaterThan(0);
    const values = frames.map((f) => f.progress as number);
    for (let i = 1; i < values.length; i++) expect(values[i]!).toBeGreaterThanOrEqual(values[i - 1]!);
    const responseAt = client.messages.findIndex((m) => m.id === 'p-1');
    const lastFrameAt = client.messages.findLastIndex(
      (m) => m.method === 'notifications/progress' && (m.params as Record<string, unknown>).progressToken === 99,
    );
    expect(lastFrameAt).toBeLessThan(responseAt);

    const before = client.notifications.length;
    const silent = await client.request<RetrieveResult>('retrieve', retrieve('retrieval stdio silent'), 'p-2');
    expect(silent.result?.hits.length).toBeGreaterThan(0);
    await settle();
    expect(client.notifications.slice(before).filter((n) => n.method === 'notifications/progress')).toEqual([]);
    // No upstream token (gw-…) ever reaches the client.
    expect(client.notifications.some((n) => String((n.params as Record<string, unknown>).progressToken).startsWith('gw-'))).toBe(false);
  });
});

describe('engine logs relayed (§17.1)', () => {
  const logConfig = () => ({
    engines: [{ id: 'talker', transport: 'stdio', command: stdioEngineCommand(['--id', 'talker', '--caps', LOG_CAPS]) }],
  });

  it('reach a client that advertised `log`, tagged with the engine id; never one that did not', async () => {
    const listening = await startStdioGateway(logConfig(), { capabilities: { log: {} } });
    const init = await listening.request<{ capabilities: Record<string, unknown> }>('info', {});
    expect(init.result?.capabilities.log).toBeDefined(); // the gateway advertises what it can relay
    const reply = await listening.request('retrieve', { query: 'retrieval logs', k: 3 });
    expect(reply.result).toBeDefined();
    const logs = listening.logs();
    expect(logs.length).toBeGreaterThan(0);
    expect(logs[0]).toEqual(expect.objectContaining({ level: 'info', logger: 'engine:talker' }));

    const deaf = await startStdioGateway(logConfig());
    const quiet = await deaf.request('retrieve', { query: 'retrieval logs', k: 3 });
    expect(quiet.result).toBeDefined();
    await deaf.request('ping', {});
    expect(deaf.logs()).toEqual([]);
  });

  it('honour the client’s minimum level', async () => {
    const picky = await startStdioGateway(logConfig(), { capabilities: { log: {} }, meta: { logLevel: 'warning' } });
    const reply = await picky.request('retrieve', { query: 'retrieval logs', k: 3 });
    expect(reply.result).toBeDefined();
    await picky.request('ping', {});
    expect(picky.logs()).toEqual([]); // the engine logs at info
    const perRequest = await picky.request('retrieve', { query: 'retrieval logs', k: 3, _meta: { logLevel: 'debug' } });
    expect(perRequest.result).toBeDefined();
    expect(picky.logs().length).toBeGreaterThan(0);
  });
});

schemaCrossCheck();
