/**
 * Structured logs: one info line per request with the documented fields, per-leg lines at debug,
 * secrets (client and upstream Authorization headers, API keys, engine env) never written, query
 * text only with gateway.logQueries, pretty output on request.
 */
import { describe, expect, it } from 'vitest';
import { rpc } from '../support/http-client.js';
import { stdioEngineCommand, type GatewayHandle } from '../support/processes.js';
import { suiteProcesses } from '../support/suite.js';
import { schemaCrossCheck } from '../support/spec-validator.js';
import { logLines, until } from './support.js';

const procs = suiteProcesses();
const engine = procs.engine;
const gateway = (config: unknown, env?: NodeJS.ProcessEnv): Promise<GatewayHandle> => procs.gateway(config, env ? { env } : {});

const SECRETS = ['upstream-secret-1', 'env-secret-2', 'client-secret-3', 'upstream-secret-4', 'cursor-secret-0123456789'];
const MARKER = 'zebraquery';

describe('request log lines', () => {
  it('log one line per request with the documented fields, legs at debug, and no secrets or query text', async () => {
    const web = await engine(['--id', 'web']);
    const flaky = await engine(['--id', 'flaky', '--fault', 'fail', '--fail-code', '-32015']);
    const gw = await gateway({
      engines: [
        {
          id: 'web',
          transport: 'http',
          url: web.url,
          headers: { Authorization: 'Bearer upstream-secret-1', 'X-Api-Key': 'upstream-secret-4' },
        },
        { id: 'local', transport: 'stdio', command: stdioEngineCommand(['--id', 'local']), env: { API_TOKEN: 'env-secret-2' } },
        { id: 'flaky', transport: 'http', url: flaky.url },
      ],
      gateway: { logLevel: 'debug', cursorSecret: 'cursor-secret-0123456789' },
    });
    const auth = { authorization: 'Bearer client-secret-3' };
    const ok = await rpc(gw.url, 'retrieve', { query: `ranking fusion ${MARKER}`, k: 3 }, { id: 'req-1', headers: auth });
    expect(ok.result).toBeDefined();
    const bad = await rpc(gw.url, 'retrieve', { query: MARKER, k: -1 }, { id: 'req-2', headers: auth });
    expect(bad.error?.code).toBe(-32602);
    await rpc(gw.url, 'ping', {}, { id: 'req-3', headers: auth });

    const lines = await until('three request lines', () => {
      const found = logLines(gw.stderr()).filter((l) => l.msg === 'request');
      return found.length >= 3 ? found : undefined;
    });
    const first = lines.find((l) => l.id === 'req-1')!;
    expect(first).toMatchObject({
      level: 30,
      method: 'retrieve',
      transport: 'http',
      code: 0,
      outcome: 'degraded',
      engines: ['local', 'web'],
      degraded: [{ engine: 'flaky', reason: 'engine-error', code: -32015 }],
      traceId: (ok.result?._meta as { traceId: string }).traceId,
      deadlineMs: 10_000,
    });
    expect(typeof first.latencyMs).toBe('number');
    expect(first.query).toBeUndefined();
    const second = lines.find((l) => l.id === 'req-2')!;
    expect(second).toMatchObject({ method: 'retrieve', code: -32602, outcome: 'error', error: { code: -32602, field: 'k' } });
    expect(lines.find((l) => l.id === 'req-3')).toMatchObject({ method: 'ping', code: 0, outcome: 'ok', engines: [] });

    // Per-leg debug lines name the request and trace they belong to.
    const legs = logLines(gw.stderr()).filter((l) => l.msg === 'leg' && l.id === 'req-1');
    expect(legs.map((l) => l.engine).sort()).toEqual(['flaky', 'local', 'web']);
    for (const leg of legs) {
      expect(leg).toMatchObject({ level: 20, method: 'retrieve', traceId: first.traceId });
      expect(typeof leg.latencyMs).toBe('number');
    }
    expect(legs.find((l) => l.engine === 'flaky')?.code).toBe(-32015);

    const text = gw.stderr();
    for (const secret of SECRETS) expect(text).not.toContain(secret);
    expect(text).not.toContain(MARKER);
  });

  it('include the query text only when gateway.logQueries is on', async () => {
    const web = await engine(['--id', 'web']);
    const gw = await gateway({ engines: [{ id: 'web', transport: 'http', url: web.url }], gateway: { logQueries: true } });
    await rpc(gw.url, 'retrieve', { query: `graph ${MARKER}`, k: 2 }, { id: 'q-1', headers: { authorization: 'Bearer client-secret-3' } });
    const line = await until('the request line', () => logLines(gw.stderr()).find((l) => l.msg === 'request' && l.id === 'q-1'));
    expect(line.query).toBe(`graph ${MARKER}`);
    expect(logLines(gw.stderr()).some((l) => l.msg === 'leg')).toBe(false); // info level: no leg lines
    expect(gw.stderr()).not.toContain('client-secret-3');
  });

  it('write human-readable lines when pretty output is selected', async () => {
    const web = await engine(['--id', 'web']);
    const gw = await gateway(
      { engines: [{ id: 'web', transport: 'http', url: web.url }] },
      { ...process.env, RCPGW_LOG_FORMAT: 'pretty', NO_COLOR: '1' },
    );
    await rpc(gw.url, 'retrieve', { query: 'graph', k: 2 }, { id: 'pretty-1' });
    await until('a pretty request line', () => (/INFO.*request/.test(gw.stderr()) ? true : undefined));
    expect(gw.stderr()).toMatch(/method: "retrieve"/);
    expect(logLines(gw.stderr()).filter((l) => 'level' in l)).toEqual([]);
  });
});

schemaCrossCheck();
