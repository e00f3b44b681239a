/**
 * gateway.drainDelayMs, the lame-duck time at shutdown: from SIGTERM on, /readyz answers 503 (so a
 * load balancer takes the replica out) while requests are still served normally; only after the
 * delay does the listener stop accepting and the drain begin. Without a balancer in the way, this
 * is the replica's half of what test/scaleout/replicas.test.ts shows with HAProxy.
 */
import http from 'node:http';
import { describe, expect, it } from 'vitest';
import { stdioEngineCommand } from '../support/processes.js';
import { recordEmitted } from '../support/spec-validator.js';
import { suiteProcesses } from '../support/suite.js';
import { until } from '../observability/support.js';

const procs = suiteProcesses();
const DRAIN_DELAY_MS = 5_000;

function request(url: string, body?: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const headers = body === undefined ? {} : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) };
    const req = http.request(url, { method: body === undefined ? 'GET' : 'POST', agent: false, headers }, (res) => {
      let text = '';
      res
        .setEncoding('utf8')
        .on('data', (chunk: string) => {
          text += chunk;
        })
        .on('end', () => resolve({ status: res.statusCode ?? 0, text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

describe('gateway.drainDelayMs', () => {
  it('turns /readyz to 503 at SIGTERM and keeps serving for the delay before it stops', async () => {
    const gw = await procs.gateway({
      engines: [{ id: 'local', transport: 'stdio', command: stdioEngineCommand(['--id', 'local']) }],
      gateway: { drainDelayMs: DRAIN_DELAY_MS },
    });
    const origin = new URL(gw.url).origin;
    expect((await request(`${origin}/readyz`)).status).toBe(200);
    const exited = new Promise<number | null>((resolve) => gw.proc.once('exit', (code) => resolve(code)));
    const signalledAt = Date.now();
    gw.proc.kill('SIGTERM');

    const notReady = await until('/readyz to answer 503', async () => {
      const answer = await request(`${origin}/readyz`);
      return answer.status === 503 ? answer : undefined;
    });
    expect(JSON.parse(notReady.text)).toMatchObject({ ready: false, reason: 'draining for shutdown' });
    // Still serving, on a new connection, while out of rotation.
    const answer = await request(
      `${gw.url}/retrieve`,
      JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'retrieve', params: { query: 'fusion', k: 2 } }),
    );
    const frame = JSON.parse(answer.text) as { result?: { hits: unknown[] } };
    recordEmitted(frame, 'retrieve');
    expect(answer.status).toBe(200);
    expect(frame.result?.hits).toHaveLength(2);
    expect(gw.proc.exitCode).toBeNull();

    expect(await exited).toBe(0);
    expect(Date.now() - signalledAt).toBeGreaterThanOrEqual(DRAIN_DELAY_MS);
  });
});
