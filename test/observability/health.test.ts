/**
 * Health endpoints: /healthz answers while the process is up; /readyz flips to 503 when every
 * engine is down (stdio engines that crash and keep failing initialize) and back to 200 when one
 * recovers; it also turns 503 while the gateway drains for shutdown. Neither needs credentials
 * and neither lives under the RCP base path.
 */
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { rpc } from '../support/http-client.js';
import { startHttpEngine, stdioEngineCommand, tmpDir, waitForEvent, writeControl } from '../support/processes.js';
import { suiteProcesses } from '../support/suite.js';
import { schemaCrossCheck } from '../support/spec-validator.js';
import { get, metricValue, origin, scrape, until } from './support.js';

const procs = suiteProcesses();
const gateway = procs.gateway;

describe('readiness', () => {
  it('flips to 503 when every engine is down and back when one recovers', async () => {
    const dir = tmpDir();
    const controls = ['one', 'two'].map((id) => path.join(dir, `${id}.json`));
    for (const file of controls) writeControl(file, { fault: 'ok' });
    const gw = await gateway({
      engines: ['one', 'two'].map((id, i) => ({
        id,
        transport: 'stdio',
        command: stdioEngineCommand(['--id', id, '--control', controls[i]!]),
      })),
    });
    const base = origin(gw.url);
    expect(await get(`${base}/healthz`)).toMatchObject({ status: 200, text: '{"status":"ok"}' });
    const ready = await get(`${base}/readyz`);
    expect(ready.status).toBe(200);
    expect(JSON.parse(ready.text)).toMatchObject({ status: 'ready', engines: { total: 2, ready: 2, breakerOpen: 0 } });
    // Not under the RCP base path, and no credentials needed.
    expect((await get(`${gw.url}/healthz`)).status).toBe(404);

    // Both engines crash on the next retrieve and on every initialize after it.
    for (const file of controls) writeControl(file, { fault: 'crash', faultInit: 'crash' });
    const res = await rpc(gw.url, 'retrieve', { query: 'graph index', k: 2 });
    expect(res.error?.code).toBe(-32010);
    const down = await until('readiness to drop', async () => {
      const r = await get(`${base}/readyz`);
      return r.status === 503 ? r : undefined;
    });
    expect(JSON.parse(down.text)).toMatchObject({
      status: 'not ready',
      reason: 'no engine is initialized',
      engines: { total: 2, ready: 0 },
    });
    expect((await get(`${base}/healthz`)).status).toBe(200); // the process itself is fine
    const samples = await scrape(base);
    expect(metricValue(samples, 'rcpgw_engine_up')).toBe(0);

    // One engine heals: its next restart succeeds and the gateway is ready again.
    writeControl(controls[0]!, { fault: 'ok' });
    const back = await until(
      'readiness to return',
      async () => {
        const r = await get(`${base}/readyz`);
        return r.status === 200 ? r : undefined;
      },
      20_000,
    );
    expect(JSON.parse(back.text)).toMatchObject({ status: 'ready', engines: { ready: 1 } });
  });

  it('turns 503 while draining for shutdown (seen on the metrics port)', async () => {
    const dir = tmpDir();
    const control = path.join(dir, 'hang.json');
    writeControl(control, { fault: 'hang' });
    const e = await startHttpEngine(['--id', 'hang', '--control', control]);
    procs.defer(() => e.stop());
    const gw = await gateway({
      engines: [{ id: 'hang', transport: 'http', url: e.url }],
      gateway: { metrics: { port: 0 }, drainTimeoutMs: 20_000 },
    });
    const ops = /metrics on (http:\/\/[^\s]+)\/metrics/.exec(gw.stderr())![1]!;
    expect((await get(`${ops}/readyz`)).status).toBe(200);
    // A request in flight keeps the drain going; readiness must say so meanwhile.
    const inFlight = rpc(gw.url, 'retrieve', { query: 'graph', k: 2, _meta: { deadlineMs: 20_000 } }).catch((err: unknown) => err);
    await waitForEvent(e.eventsFile, (ev) => ev.ev === 'request' && ev.method === 'retrieve');
    gw.proc.kill('SIGTERM');
    const draining = await until('readiness to report draining', async () => {
      const r = await get(`${ops}/readyz`);
      return r.status === 503 ? r : undefined;
    });
    expect(JSON.parse(draining.text)).toMatchObject({ reason: 'draining for shutdown' });
    expect((await get(`${ops}/healthz`)).status).toBe(200);
    writeControl(control, { fault: 'ok' });
    await e.stop(); // the hung leg fails, the request is answered, the drain completes
    await inFlight;
    await until('the gateway to exit', () => (gw.proc.exitCode !== null ? true : undefined));
    expect(gw.proc.exitCode).toBe(0);
  });
});

schemaCrossCheck();
