/**
 * Cancellation over HTTP (§5.2, §7.14, §13.1): a client that goes away (mid-SSE or waiting on a
 * plain JSON answer) cancels the legs still running — HTTP legs see their request aborted, stdio
 * legs get `notifications/cancel` with the gateway's upstream id — and only those. With
 * `gateway.httpSessions`, `initialize` issues `_meta.session` and a client presenting it as
 * `RCP-Session` can cancel its own requests by id. Logs reach HTTP clients that set `_meta.logLevel`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetch } from 'undici';
import { methodUrl, rpc, rpcSse } from '../support/http-client.js';
import {
  readEvents,
  startGateway,
  startHttpEngine,
  stdioEngineCommand,
  tmpDir,
  waitForEvent,
  writeControl,
  type EngineEvent,
  type EngineHandle,
  type GatewayHandle,
} from '../support/processes.js';
import { emittedErrors, schemaCrossCheck, schemaCrossCheckBanner } from '../support/spec-validator.js';
import { cleanups, runCleanups } from './helpers.js';

interface RetrieveResult {
  hits: Array<{ id: string }>;
  _meta: { engines: string[]; degraded?: Array<{ engine: string; reason: string }> };
}

const dir = tmpDir('rcp-disconnect-');
const controls = { fast: `${dir}/fast.json`, slow: `${dir}/slow.json`, local: `${dir}/local.json` };
const localEvents = `${dir}/local-events.ndjson`;
const LOG_CAPS = JSON.stringify({ retrieve: { maxK: 50, modes: ['sparse'] }, streaming: {}, log: {} });
let fast: EngineHandle;
let slow: EngineHandle;
let gw: GatewayHandle;

function behave(overrides: Partial<Record<keyof typeof controls, Record<string, unknown>>> = {}): void {
  for (const id of Object.keys(controls) as Array<keyof typeof controls>) {
    writeControl(controls[id], { fault: 'ok', progressFrames: 2, progressIntervalMs: 0, ...overrides[id] });
  }
}

function requestOf(file: string, query: string): Promise<EngineEvent> {
  return waitForEvent(file, (e) => e.ev === 'request' && e.method === 'retrieve' && e.params?.query === query);
}

const THREE = { 'x-rcpgw': { engines: ['fast', 'slow', 'local'] } };

/** The fast leg answered; the HTTP `slow` and stdio `local` legs are hanging. */
async function legsInPlace(query: string): Promise<{ fastRequest: EngineEvent; slowRequest: EngineEvent; localRequest: EngineEvent }> {
  const fastRequest = await requestOf(fast.eventsFile, query);
  await waitForEvent(fast.eventsFile, (e) => e.ev === 'response' && e.id === fastRequest.id);
  return { fastRequest, slowRequest: await requestOf(slow.eventsFile, query), localRequest: await requestOf(localEvents, query) };
}

/** Only the live legs heard of it: `slow` aborted, `local` cancelled by its upstream id, `fast` untouched. */
async function expectLiveLegsCancelled(legs: Awaited<ReturnType<typeof legsInPlace>>): Promise<void> {
  await waitForEvent(slow.eventsFile, (e) => e.ev === 'abort' && e.id === legs.slowRequest.id);
  const cancel = await waitForEvent(localEvents, (e) => e.ev === 'cancel' && e.id === legs.localRequest.id);
  expect(cancel.known).toBe(true);
  expect(readEvents(fast.eventsFile).some((e) => e.ev === 'abort' && e.id === legs.fastRequest.id)).toBe(false);
}

beforeAll(async () => {
  behave();
  fast = await startHttpEngine(['--id', 'fast', '--control', controls.fast]);
  slow = await startHttpEngine(['--id', 'slow', '--control', controls.slow]);
  cleanups.push(
    () => fast.stop(),
    () => slow.stop(),
  );
  gw = await startGateway({
    config: {
      engines: [
        { id: 'fast', transport: 'http', url: fast.url },
        { id: 'slow', transport: 'http', url: slow.url },
        {
          id: 'local',
          transport: 'stdio',
          command: stdioEngineCommand(['--id', 'local', '--events', localEvents, '--control', controls.local]),
        },
        { id: 'talker', transport: 'stdio', command: stdioEngineCommand(['--id', 'talker', '--caps', LOG_CAPS]) },
      ],
      gateway: { httpSessions: true, progressFramesPerSecond: 1000 },
    },
  });
  cleanups.push(() => gw.stop());
});

afterAll(async () => {
  await runCleanups();
  console.log(schemaCrossCheckBanner());
  expect(emittedErrors()).toEqual([]);
});

describe('client disconnect', () => {
  it('mid-SSE cancels only the legs still running', async () => {
    behave({ slow: { fault: 'hang' }, local: { fault: 'hang' } });
    const query = 'retrieval disconnect sse';
    const abort = new AbortController();
    const legs = legsInPlace(query);
    const reply = await rpcSse(
      gw.url,
      'retrieve',
      { query, k: 4, _meta: THREE },
      {
        progressToken: 'gone',
        signal: abort.signal,
        // Leave once the gateway reports the first engine answered: two legs are still running.
        onFrame: (frame) => {
          const message = String((frame as { params?: { message?: unknown } }).params?.message ?? '');
          if (/1 of 3 engines answered/.test(message)) abort.abort();
        },
      },
    );
    expect(reply.aborted).toBe(true);
    expect(reply.final).toBeUndefined();
    await expectLiveLegsCancelled(await legs);
    // The abandoned call finished inside the gateway with nobody to write to; it is still serving.
    const pong = await rpc(gw.url, 'ping', { nonce: 'still-here' });
    expect(pong.result).toEqual({ nonce: 'still-here' });
  });

  it('while waiting on a plain JSON answer cancels only the legs still running', async () => {
    behave({ slow: { fault: 'hang' }, local: { fault: 'hang' } });
    const query = 'retrieval disconnect json';
    const abort = new AbortController();
    const pending = rpc(gw.url, 'retrieve', { query, k: 4, _meta: THREE }, { signal: abort.signal });
    const legs = await legsInPlace(query);
    abort.abort();
    await expect(pending).rejects.toThrow();
    await expectLiveLegsCancelled(legs);
    // The gateway is fine afterwards.
    behave();
    const after = await rpc<RetrieveResult>(gw.url, 'retrieve', { query: 'retrieval after disconnect', k: 4, _meta: THREE });
    expect(after.result?._meta.engines.sort()).toEqual(['fast', 'local', 'slow']);
  });
});

describe('stateful HTTP sessions (gateway.httpSessions)', () => {
  async function openSession(): Promise<string> {
    const reply = await rpc<{ _meta: { session?: unknown } }>(gw.url, 'initialize', { protocolVersion: 1, client: { name: 't' } });
    const token = reply.result?._meta.session;
    expect(typeof token).toBe('string');
    return token as string;
  }

  async function postCancel(id: string | number, session?: string): Promise<number> {
    const res = await fetch(methodUrl(gw.url, 'notifications/cancel'), {
      method: 'POST',
      body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/cancel', params: { id } }),
      headers: { 'content-type': 'application/json', ...(session ? { 'rcp-session': session } : {}) },
    });
    await res.text();
    return res.status;
  }

  it('issues a distinct token per initialize', async () => {
    expect(await openSession()).not.toBe(await openSession());
  });

  it('lets a client cancel its own SSE request by id: -32006 once, only live legs cancelled', async () => {
    behave({ slow: { fault: 'hang' }, local: { fault: 'hang' } });
    const session = await openSession();
    const query = 'retrieval session cancel sse';
    const legs = legsInPlace(query);
    const pending = rpcSse(
      gw.url,
      'retrieve',
      { query, k: 4, _meta: THREE },
      { id: 'q1', progressToken: 'q1-progress', headers: { 'rcp-session': session } },
    );
    const inPlace = await legs;
    expect(await postCancel('q1', session)).toBe(204);
    const reply = await pending;
    expect(reply.final).toEqual(expect.objectContaining({ id: 'q1', error: expect.objectContaining({ code: -32006 }) }));
    expect(reply.framesAfterFinal).toBe(0);
    expect(reply.frames.filter((f) => (f as { id?: unknown }).id === 'q1')).toHaveLength(1);
    await expectLiveLegsCancelled(inPlace);
  });

  it('lets a client cancel its own plain JSON request by id', async () => {
    behave({ slow: { fault: 'hang' } });
    const session = await openSession();
    const query = 'retrieval session cancel json';
    const pending = rpc(
      gw.url,
      'retrieve',
      { query, k: 4, _meta: { 'x-rcpgw': { engines: ['fast', 'slow'] } } },
      { id: 77, headers: { 'rcp-session': session } },
    );
    const slowRequest = await requestOf(slow.eventsFile, query);
    expect(await postCancel(77, session)).toBe(204);
    const reply = await pending;
    expect(reply.id).toBe(77);
    expect(reply.error?.code).toBe(-32006);
    await waitForEvent(slow.eventsFile, (e) => e.ev === 'abort' && e.id === slowRequest.id);
  });

  it('ignores a cancel from another session, or from no session at all', async () => {
    behave({ slow: { fault: 'hang' } });
    const mine = await openSession();
    const theirs = await openSession();
    const query = 'retrieval session foreign cancel';
    const pending = rpc<RetrieveResult>(
      gw.url,
      'retrieve',
      { query, k: 4, _meta: { deadlineMs: 700, 'x-rcpgw': { engines: ['fast', 'slow'] } } },
      { id: 'mine-1', headers: { 'rcp-session': mine } },
    );
    await requestOf(slow.eventsFile, query);
    expect(await postCancel('mine-1', theirs)).toBe(204);
    expect(await postCancel('mine-1')).toBe(204);
    expect(await postCancel('mine-1', 'not-a-session')).toBe(204);
    const reply = await pending;
    // Not cancelled: the deadline ended the hanging leg and the call succeeded without it.
    expect(reply.error).toBeUndefined();
    expect(reply.result?._meta.engines).toEqual(['fast']);
  });

  it('rejects a second in-flight request with the same id in one session (-32600), and ignores late cancels', async () => {
    behave({ slow: { fault: 'hang' } });
    const session = await openSession();
    const query = 'retrieval session duplicate';
    const params = { query, k: 4, _meta: { deadlineMs: 700, 'x-rcpgw': { engines: ['fast', 'slow'] } } };
    const first = rpc<RetrieveResult>(gw.url, 'retrieve', params, { id: 'dup', headers: { 'rcp-session': session } });
    await requestOf(slow.eventsFile, query);
    const second = await rpc(gw.url, 'retrieve', params, { id: 'dup', headers: { 'rcp-session': session } });
    expect(second.error?.code).toBe(-32600);
    const firstReply = await first;
    expect(firstReply.result?._meta.engines).toEqual(['fast']);
    // The request is finished: a cancel for it now is a no-op, and the id is free again.
    expect(await postCancel('dup', session)).toBe(204);
    behave();
    const again = await rpc<RetrieveResult>(
      gw.url,
      'retrieve',
      { ...params, query: 'retrieval session reuse' },
      { id: 'dup', headers: { 'rcp-session': session } },
    );
    expect(again.result?.hits.length).toBeGreaterThan(0);
  });
});

describe('engine logs over HTTP (§17.1)', () => {
  const talk = { query: 'retrieval logs over http', k: 3 };

  it('reach an SSE client that set `_meta.logLevel`, tagged with the engine id', async () => {
    const reply = await rpcSse(gw.url, 'retrieve', { ...talk, _meta: { logLevel: 'info', 'x-rcpgw': { engines: ['talker'] } } });
    const logs = reply.frames.filter((f) => (f as { method?: string }).method === 'notifications/log');
    expect(logs.length).toBeGreaterThan(0);
    expect((logs[0] as { params: unknown }).params).toEqual(expect.objectContaining({ level: 'info', logger: 'engine:talker' }));
    expect(reply.frames.at(-1)).toBe(reply.final);
  });

  it('never reach a client that did not ask, nor one whose level is above the message', async () => {
    const silent = await rpcSse(gw.url, 'retrieve', { ...talk, _meta: { 'x-rcpgw': { engines: ['talker'] } } });
    expect(silent.frames.filter((f) => (f as { method?: string }).method === 'notifications/log')).toEqual([]);
    const picky = await rpcSse(gw.url, 'retrieve', { ...talk, _meta: { logLevel: 'error', 'x-rcpgw': { engines: ['talker'] } } });
    expect(picky.frames.filter((f) => (f as { method?: string }).method === 'notifications/log')).toEqual([]);
    expect(picky.final?.result).toBeDefined();
  });
});

schemaCrossCheck();
