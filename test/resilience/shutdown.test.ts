/**
 * Graceful shutdown on SIGTERM, for `serve` (HTTP) and `stdio`: stop accepting, let in-flight
 * requests finish within `drainTimeoutMs`, answer the rest -32010 (each request exactly once),
 * stop the child engines, exit 0 — and leave no engine process behind.
 */
import { afterAll, describe, expect, it } from 'vitest';
import path from 'node:path';
import { StdioClient } from '../support/stdio-client.js';
import { GATEWAY_CLI, REPO_ROOT, startGateway, stdioEngineCommand, tmpDir, waitForEvent, writeConfig } from '../support/processes.js';
import { emittedErrors, schemaCrossCheck, schemaCrossCheckBanner } from '../support/spec-validator.js';
import { enginePids, expectAllGone, QUERY, retrieve, type RetrieveResult } from './helpers.js';

afterAll(() => {
  console.log(schemaCrossCheckBanner());
  expect(emittedErrors()).toEqual([]);
});

function setup(name: string): { configFile: string; hangEvents: string; slowEvents: string } {
  const dir = tmpDir(`rcp-shutdown-${name}-`);
  const hangEvents = path.join(dir, 'hang.ndjson');
  const slowEvents = path.join(dir, 'slow.ndjson');
  const configFile = writeConfig(dir, {
    engines: [
      { id: 'hang', transport: 'stdio', command: stdioEngineCommand(['--id', 'hang', '--fault', 'hang', '--events', hangEvents]) },
      {
        id: 'slow',
        transport: 'stdio',
        command: stdioEngineCommand(['--id', 'slow', '--fault', 'slow', '--delay-ms', '300', '--events', slowEvents]),
      },
    ],
    gateway: { deadlineMs: 30_000, engineTimeoutMs: 30_000, drainTimeoutMs: 1_500, logLevel: 'warn' },
  });
  return { configFile, hangEvents, slowEvents };
}

const started = (file: string): Promise<unknown> => waitForEvent(file, (e) => e.ev === 'request' && e.method === 'retrieve');

describe('serve (HTTP)', () => {
  it('drains, answers what is left with -32010, stops its engines and exits 0', async () => {
    const { configFile, hangEvents, slowEvents } = setup('http');
    const gw = await startGateway({ configFile });
    const exited = new Promise<number | null>((resolve) => gw.proc.once('exit', (code) => resolve(code)));
    const hanging = retrieve(gw.url, { engines: ['hang'] });
    const slow = retrieve(gw.url, { engines: ['slow'] });
    await Promise.all([started(hangEvents), started(slowEvents)]);
    const pids = [...enginePids(hangEvents), ...enginePids(slowEvents)];
    gw.proc.kill('SIGTERM');
    const [hangRes, slowRes] = await Promise.all([hanging, slow]);
    // Finished within the drain: a normal answer.
    expect(slowRes.error).toBeUndefined();
    expect(slowRes.result!.hits.length).toBeGreaterThan(0);
    // Still running when the drain ran out: answered, once, with -32010.
    expect(hangRes.status).toBe(200);
    expect(hangRes.error).toMatchObject({ code: -32010, message: 'server is shutting down' });
    expect(await exited).toBe(0);
    await expectAllGone(pids);
  });
});

describe('stdio', () => {
  it('stops reading, drains, answers what is left with -32010, stops its engines and exits 0', async () => {
    const { configFile, hangEvents, slowEvents } = setup('stdio');
    const client = new StdioClient([process.execPath, GATEWAY_CLI, 'stdio', '--config', configFile], { cwd: REPO_ROOT });
    expect((await client.request('initialize', { protocolVersion: 1 })).result).toBeDefined();
    const hanging = client.request('retrieve', { query: QUERY, k: 3, _meta: { 'x-rcpgw': { engines: ['hang'] } } });
    const slow = client.request<RetrieveResult>('retrieve', { query: QUERY, k: 3, _meta: { 'x-rcpgw': { engines: ['slow'] } } });
    await Promise.all([started(hangEvents), started(slowEvents)]);
    const pids = [...enginePids(hangEvents), ...enginePids(slowEvents)];
    client.kill('SIGTERM');
    const [hangRes, slowRes] = await Promise.all([hanging, slow]);
    expect(slowRes.error).toBeUndefined();
    expect(slowRes.result!.hits.length).toBeGreaterThan(0);
    expect(hangRes.error).toMatchObject({ code: -32010, message: 'server is shutting down' });
    expect((await client.exited).code).toBe(0);
    expect(client.violations).toEqual([]);
    await expectAllGone(pids);
  });
});

schemaCrossCheck();
