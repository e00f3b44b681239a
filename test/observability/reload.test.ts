/**
 * Hot reload under load: SIGHUP re-reads the config; an added engine serves new requests, a
 * removed one is stopped only after the requests using it finished, an unchanged engine keeps its
 * process (no second start), a changed one is replaced, an invalid file is rejected with the
 * exact problem while the old config stays in force, and every request is answered exactly once.
 */
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { rpc } from '../support/http-client.js';
import {
  GATEWAY_CLI,
  readEvents,
  startGateway,
  stdioEngineCommand,
  tmpDir,
  waitForEvent,
  writeConfig,
  writeControl,
  type GatewayHandle,
} from '../support/processes.js';
import { StdioClient } from '../support/stdio-client.js';
import { suiteProcesses } from '../support/suite.js';
import { schemaCrossCheck } from '../support/spec-validator.js';
import { logLines, metricValue, origin, scrape, until } from './support.js';

const procs = suiteProcesses();

interface Outcome {
  engines: string[];
  error?: number;
}

/** `concurrency` clients sending retrieves back to back until stopped. */
function load(url: string, concurrency: number): { outcomes: Outcome[]; stop: () => Promise<void> } {
  const outcomes: Outcome[] = [];
  let running = true;
  const loops = Array.from({ length: concurrency }, async (_, worker) => {
    for (let i = 0; running; i++) {
      const res = await rpc(url, 'retrieve', { query: 'graph index query', k: 3 }, { id: `w${worker}-${i}` });
      outcomes.push(res.error ? { engines: [], error: res.error.code } : { engines: (res.result?._meta as { engines: string[] }).engines });
    }
  });
  return {
    outcomes,
    stop: async () => {
      running = false;
      await Promise.all(loops);
    },
  };
}

function engineEntry(id: string, events: string, extra: string[] = [], settings: Record<string, unknown> = {}): Record<string, unknown> {
  return { id, transport: 'stdio', command: stdioEngineCommand(['--id', id, '--events', events, ...extra]), ...settings };
}

const reloadedLines = (stderr: string): Array<Record<string, unknown>> => logLines(stderr).filter((l) => l.msg === 'config reloaded');

describe('hot reload over HTTP', () => {
  let gw: GatewayHandle;

  it('adds and removes engines under load, keeps unchanged ones, rejects an invalid file', async () => {
    const dir = tmpDir();
    const eventsA = path.join(dir, 'a.ndjson');
    const eventsB = path.join(dir, 'b.ndjson');
    const controlA = path.join(dir, 'a-control.json');
    writeControl(controlA, { fault: 'ok' });
    const a = engineEntry('a', eventsA, ['--control', controlA]);
    const b = engineEntry('b', eventsB, ['--id-prefix', 'b-']);
    const configFile = writeConfig(dir, { engines: [a] });
    gw = await startGateway({ configFile });
    procs.defer(() => gw.stop());
    const traffic = load(gw.url, 4);

    // 1. Add b.
    await until('some traffic on a', () => (traffic.outcomes.length >= 20 ? true : undefined));
    writeConfig(dir, { engines: [a, b] });
    gw.proc.kill('SIGHUP');
    const first = await until('the first reload', () => reloadedLines(gw.stderr())[0]);
    expect(first).toMatchObject({ trigger: 'SIGHUP', added: ['b'], removed: [], replaced: [], unchanged: ['a'] });
    await until('a fused answer from a and b', () => traffic.outcomes.find((o) => o.engines.includes('b')));
    expect(readEvents(eventsA).filter((e) => e.ev === 'start')).toHaveLength(1); // a kept its process

    // 2. Remove a while calls to it are in flight (slow: 300 ms each).
    writeControl(controlA, { fault: 'slow', delayMs: 300 });
    const slowSince = Date.now();
    await waitForEvent(eventsA, (e) => e.ev === 'request' && e.method === 'retrieve' && e.t >= slowSince);
    const atSecondReload = traffic.outcomes.length;
    writeConfig(dir, { engines: [b] });
    gw.proc.kill('SIGHUP');
    const second = await until('the second reload', () => reloadedLines(gw.stderr())[1]);
    expect(second).toMatchObject({ added: [], removed: ['a'], unchanged: ['b'] });
    const exit = await waitForEvent(eventsA, (e) => e.ev === 'exit');
    const answeredByA = readEvents(eventsA).filter((e) => e.ev === 'response');
    expect(answeredByA.length).toBeGreaterThan(0);
    // a was stopped only after it had answered every call it got, the slow ones included.
    expect(readEvents(eventsA).filter((e) => e.ev === 'request')).toHaveLength(answeredByA.length);
    expect(answeredByA.filter((e) => e.code !== undefined)).toEqual([]);
    expect(exit.t).toBeGreaterThanOrEqual(Math.max(...answeredByA.map((e) => e.t)));
    // Requests in flight at the switch finished on the set they started with (a included).
    await until('the in-flight slow calls to finish', () => traffic.outcomes.slice(atSecondReload).find((o) => o.engines.includes('a')));
    const afterRemoval = traffic.outcomes.length;
    await until('answers without a', () => (traffic.outcomes.length >= afterRemoval + 20 ? true : undefined));
    expect(traffic.outcomes.slice(afterRemoval + 4).every((o) => o.engines.length === 1 && o.engines[0] === 'b')).toBe(true);

    // 3. An invalid file: rejected with the exact problem; b keeps serving.
    writeConfig(dir, { engines: [{ id: 'b', transport: 'http', url: 'not a url' }] });
    gw.proc.kill('SIGHUP');
    const rejected = await until('the rejection', () =>
      logLines(gw.stderr()).find((l) => typeof l.msg === 'string' && l.msg.startsWith('config reload rejected')),
    );
    expect(rejected.level).toBe(50);
    expect(rejected.msg).toContain('engines[0].url: expected an http(s) URL');
    const beforeInvalid = traffic.outcomes.length;
    await until('more answers', () => (traffic.outcomes.length >= beforeInvalid + 10 ? true : undefined));

    await traffic.stop();
    // Every request got one answer, and every answer was a success.
    expect(traffic.outcomes.filter((o) => o.error !== undefined)).toEqual([]);
    expect(traffic.outcomes.length).toBeGreaterThan(60);
    expect(readEvents(eventsB).filter((e) => e.ev === 'start')).toHaveLength(1); // b never restarted
    const samples = await scrape(origin(gw.url));
    expect(metricValue(samples, 'rcpgw_config_reloads_total', { result: 'ok' })).toBe(2);
    expect(metricValue(samples, 'rcpgw_config_reloads_total', { result: 'invalid' })).toBe(1);
    expect(metricValue(samples, 'rcpgw_engine_up', { engine: 'a' })).toBe(0); // gone from the gauges
    expect(samples.some((s) => s.name === 'rcpgw_engine_up' && s.labels.engine === 'a')).toBe(false);
    expect(metricValue(samples, 'rcpgw_requests_total', { method: 'retrieve', code: '0' })).toBe(traffic.outcomes.length);
  });
});

describe('hot reload on file change', () => {
  it('re-reads the config when gateway.watchConfig is on', async () => {
    const dir = tmpDir();
    const a = engineEntry('a', path.join(dir, 'a.ndjson'));
    const b = engineEntry('b', path.join(dir, 'b.ndjson'), ['--id-prefix', 'b-']);
    const configFile = writeConfig(dir, { engines: [a], gateway: { watchConfig: true } });
    const gw = await startGateway({ configFile });
    procs.defer(() => gw.stop());
    writeConfig(dir, { engines: [a, b], gateway: { watchConfig: true } });
    const line = await until('the watch reload', () => reloadedLines(gw.stderr())[0]);
    expect(line).toMatchObject({ trigger: 'watch', added: ['b'] });
    const res = await rpc(gw.url, 'retrieve', { query: 'graph index', k: 2 });
    expect((res.result?._meta as { engines: string[] }).engines.sort()).toEqual(['a', 'b']);
    // Rewriting identical bytes is noticed but is not a reload.
    const unchanged = (): number => logLines(gw.stderr()).filter((l) => l.msg === 'config file unchanged; not reloading').length;
    const seen = unchanged();
    writeConfig(dir, { engines: [a, b], gateway: { watchConfig: true, logLevel: 'debug' } });
    await until('the second reload', () => reloadedLines(gw.stderr())[1]);
    writeConfig(dir, { engines: [a, b], gateway: { watchConfig: true, logLevel: 'debug' } });
    await until('the identical write to be noticed', () => (unchanged() > seen ? true : undefined));
    expect(reloadedLines(gw.stderr())).toHaveLength(2);
  });
});

describe('hot reload over stdio', () => {
  it('replaces a changed engine and never answers a request twice', async () => {
    const dir = tmpDir();
    const eventsA = path.join(dir, 'a.ndjson');
    const eventsC = path.join(dir, 'c.ndjson');
    const a = engineEntry('a', eventsA);
    const configFile = writeConfig(dir, { engines: [a], gateway: { watchConfig: false } });
    const client = new StdioClient([process.execPath, GATEWAY_CLI, 'stdio', '--config', configFile]);
    procs.defer(async () => client.kill());
    expect(
      (await client.request('initialize', { protocolVersion: 1, client: { name: 'reload-test', version: '0' }, capabilities: {} })).result,
    ).toBeDefined();

    const answers: Array<Promise<{ error?: { code: number } }>> = [];
    const send = (n: number): void => {
      for (let i = 0; i < n; i++) answers.push(client.request('retrieve', { query: 'graph index', k: 2 }));
    };
    send(40);
    // a's timeout changes (a connection setting) → replaced by a new process; c is added.
    writeConfig(dir, {
      engines: [{ ...a, timeoutMs: 7_000 }, engineEntry('c', eventsC, ['--id-prefix', 'c-'])],
      gateway: { watchConfig: false },
    });
    client.proc.kill('SIGHUP');
    send(40);
    await client.waitForStderr(/"msg":"config reloaded"/);
    send(40);
    const results = await Promise.all(answers);
    expect(results.filter((r) => r.error !== undefined)).toEqual([]);
    expect(results).toHaveLength(120);
    const line = reloadedLines(client.stderr)[0]!;
    expect(line).toMatchObject({ added: ['c'], replaced: ['a'] });
    // The old a process exits once its calls are done; the new one took over.
    const starts = await until('a second a process', () => {
      const s = readEvents(eventsA).filter((e) => e.ev === 'start');
      return s.length === 2 ? s : undefined;
    });
    await waitForEvent(eventsA, (e) => e.ev === 'exit');
    expect(starts[0]!.pid).not.toBe(starts[1]!.pid);
    const later = await client.request('retrieve', { query: 'graph index', k: 2 });
    expect((later.result?._meta as { engines: string[] }).engines.sort()).toEqual(['a', 'c']);
    expect(await client.close()).toBe(0);
    expect(client.violations).toEqual([]);
  });
});

schemaCrossCheck();
