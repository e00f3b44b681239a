/**
 * Engine supervision: a stdio engine that exits fails its in-flight calls at once (-32010), is
 * restarted and re-initialized, and no process is left behind; an engine that keeps failing its
 * initialize is restarted again and again without leaving zombies; engines that are down at
 * startup do not stop the gateway (unless `required`) and are picked up when they come back.
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
import { catalog, enginePids, expectAllGone, expectHealthyAnswer, isAlive, retrieve, waitUntil } from './helpers.js';

let ok: EngineHandle;
let late: EngineHandle | undefined;
let latePort: number;
let gateway: GatewayHandle;
let control: string;
let crashyEvents: string;
let brokenEvents: string;

beforeAll(async () => {
  const dir = tmpDir('rcp-supervision-');
  control = path.join(dir, 'control.json');
  crashyEvents = path.join(dir, 'crashy.ndjson');
  brokenEvents = path.join(dir, 'broken.ndjson');
  writeControl(control, { fault: 'ok' });
  ok = await startHttpEngine(['--id', 'ok', '--id-prefix', 'ok-']);
  // A port with nothing listening: start an engine to learn a free port, then stop it.
  const probe = await startHttpEngine(['--id', 'probe']);
  latePort = probe.port;
  await probe.stop();
  gateway = await startGateway({
    config: {
      engines: [
        { id: 'ok', transport: 'http', url: ok.url, required: true },
        {
          id: 'crashy',
          transport: 'stdio',
          command: stdioEngineCommand(['--id', 'crashy', '--id-prefix', 'c-', '--control', control, '--events', crashyEvents]),
        },
        {
          id: 'broken',
          transport: 'stdio',
          command: stdioEngineCommand(['--id', 'broken', '--fault-init', 'fail', '--events', brokenEvents]),
        },
        { id: 'late', transport: 'http', url: `http://127.0.0.1:${latePort}/rcp` },
        { id: 'missing', transport: 'stdio', command: [path.join(dir, 'no-such-engine')] },
      ],
      gateway: { deadlineMs: 5_000, engineTimeoutMs: 4_000, logLevel: 'warn', restartDelayMs: 50, restartMaxDelayMs: 400 },
    },
  });
});

afterAll(async () => {
  expect(await gateway.stop()).toBe(0);
  // Read after the stop: broken is restarted on a timer until then, and a process started just
  // before the stop must be counted too.
  const pids = [...enginePids(crashyEvents), ...enginePids(brokenEvents)];
  await expectAllGone(pids);
  await Promise.all([ok?.stop(), late?.stop()]);
  console.log(schemaCrossCheckBanner());
  expect(emittedErrors()).toEqual([]);
});

describe('a stdio engine that exits mid-call', () => {
  it('fails every call in flight on it at once with -32010, the healthy engine still answers', async () => {
    await waitUntil('crashy ready', async () => (await catalog(gateway.url)).get('crashy')?._meta.status === 'ready');
    writeControl(control, { fault: 'hang' });
    const hanging = retrieve(gateway.url, { engines: ['ok', 'crashy'] });
    await waitForEvent(crashyEvents, (e) => e.ev === 'request' && e.method === 'retrieve');
    writeControl(control, { fault: 'crash' });
    const crashing = retrieve(gateway.url, { engines: ['ok', 'crashy'] });
    for (const res of await Promise.all([hanging, crashing])) {
      const result = expectHealthyAnswer(res, 5_000, 'ok');
      // "crashed", not "timeout": the hanging call was failed when the process exited, not at its deadline.
      expect(result._meta.degraded).toEqual([expect.objectContaining({ engine: 'crashy', reason: 'crashed', code: -32010 })]);
    }
  });

  it('is restarted and re-initialized; the old process is gone', async () => {
    const [first] = enginePids(crashyEvents);
    const restarted = await waitUntil('a second crashy process', () => enginePids(crashyEvents)[1]);
    expect(restarted).not.toBe(first);
    expect(isAlive(first!)).toBe(false);
    writeControl(control, { fault: 'ok' });
    await waitUntil('crashy ready again', async () => (await catalog(gateway.url)).get('crashy')?._meta.status === 'ready');
    const inits = readEvents(crashyEvents).filter((e) => e.ev === 'request' && e.method === 'initialize');
    expect(inits.length).toBe(2);
    const result = expectHealthyAnswer(await retrieve(gateway.url, { engines: ['ok', 'crashy'] }), 5_000, 'ok');
    expect(result.hits.some((h) => h.meta.engine === 'crashy')).toBe(true);
  });
});

describe('an engine whose initialize keeps failing', () => {
  it('is restarted with backoff, each failed process killed and reaped (no zombies)', async () => {
    const pids = await waitUntil('three broken processes', () => {
      const all = enginePids(brokenEvents);
      return all.length >= 3 ? all : undefined;
    });
    // All but the newest were killed; a zombie would still answer kill(pid, 0).
    await waitUntil('older broken processes reaped', () => pids.slice(0, -1).every((pid) => !isAlive(pid)));
    const entry = (await catalog(gateway.url)).get('broken')!;
    expect(entry._meta.status).toBe('down');
    const result = expectHealthyAnswer(await retrieve(gateway.url, { engines: ['ok', 'broken'] }), 5_000, 'ok');
    expect(result._meta.degraded).toEqual([expect.objectContaining({ engine: 'broken', reason: 'not-ready', code: -32010 })]);
  });
});

describe('engines down at startup', () => {
  it('do not stop the gateway; their legs are noted as not ready', async () => {
    const engines = await catalog(gateway.url);
    expect(engines.get('late')!._meta.status).toBe('down');
    expect(engines.get('missing')!._meta.status).toBe('down');
    const result = expectHealthyAnswer(await retrieve(gateway.url, { engines: ['ok', 'late', 'missing'] }), 5_000, 'ok');
    expect(result._meta.degraded?.map((d) => `${d.engine}:${d.reason}`).sort()).toEqual(['late:not-ready', 'missing:not-ready']);
  });

  it('are picked up when they come back', async () => {
    late = await startHttpEngine(['--id', 'late', '--id-prefix', 'l-', '--port', String(latePort)]);
    await waitUntil('late ready', async () => (await catalog(gateway.url)).get('late')?._meta.status === 'ready', 15_000);
    const result = expectHealthyAnswer(await retrieve(gateway.url, { engines: ['ok', 'late'] }), 5_000, 'ok');
    expect(result.hits.some((h) => h.meta.engine === 'late')).toBe(true);
  });

  it('a required engine that cannot start fails the startup', async () => {
    const dir = tmpDir('rcp-required-');
    await expect(
      startGateway({
        config: {
          engines: [
            { id: 'ok', transport: 'http', url: ok.url },
            { id: 'vital', transport: 'stdio', required: true, command: [path.join(dir, 'no-such-engine')] },
          ],
        },
      }),
    ).rejects.toThrow(/exited \(code 1[\s\S]*required engine\(s\) failed to start: vital/);
  });
});

schemaCrossCheck();
