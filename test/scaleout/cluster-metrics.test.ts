/**
 * `serve --workers N` reports one /metrics for the whole process: whichever worker takes the
 * scrape, the primary gathers every worker's registry and sums them (prom-client's
 * AggregatorRegistry), so counters count the process, not one worker. Gauges that mirror engine
 * state aggregate by meaning: engine_up is the minimum (1 only when every worker has the engine
 * up), breaker_state the maximum (the worst worker).
 */
import http from 'node:http';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { readEvents, stdioEngineCommand, tmpDir } from '../support/processes.js';
import { recordEmitted } from '../support/spec-validator.js';
import { suiteProcesses } from '../support/suite.js';
import { metricValue, parseExposition, type Sample } from '../observability/support.js';

const procs = suiteProcesses();

/** A request on a connection of its own: the cluster hands new connections to workers in turn. */
function onNewConnection(url: string, method: 'GET' | 'POST', body?: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const headers = body === undefined ? {} : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) };
    const req = http.request(url, { method, agent: false, headers }, (res) => {
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

describe('serve --workers 2: one /metrics for the process', () => {
  it("sums both workers' counts whichever worker answers the scrape", async () => {
    const dir = tmpDir('rcp-cluster-metrics-');
    // Each worker starts its own stdio engine; RCPGW_WORKER_ID (the worker's slot, 1..N, set by
    // the primary) gives each engine an events file of its own, so the test sees who served what.
    const events = path.join(dir, 'events-${RCPGW_WORKER_ID:-primary}.ndjson');
    const gw = await procs.gateway(
      { engines: [{ id: 'local', transport: 'stdio', command: stdioEngineCommand(['--id', 'local', '--events', events]) }] },
      { args: ['--workers', '2'] },
    );
    const origin = new URL(gw.url).origin;

    const REQUESTS = 10;
    for (let n = 1; n <= REQUESTS; n++) {
      const answer = await onNewConnection(
        `${gw.url}/retrieve`,
        'POST',
        JSON.stringify({ jsonrpc: '2.0', id: n, method: 'retrieve', params: { query: 'fusion ranking', k: 2 } }),
      );
      const frame = JSON.parse(answer.text) as { error?: unknown };
      recordEmitted(frame, 'retrieve');
      expect(frame.error).toBeUndefined();
    }
    // Both workers served some of them.
    const perWorker = [1, 2].map(
      (id) => readEvents(path.join(dir, `events-${id}.ndjson`)).filter((e) => e.ev === 'request' && e.method === 'retrieve').length,
    );
    expect(
      perWorker.every((count) => count > 0),
      `retrieves per worker: ${perWorker.join(', ')}`,
    ).toBe(true);
    expect(perWorker[0]! + perWorker[1]!).toBe(REQUESTS);

    // Every scrape (on fresh connections, so both workers take some) shows the process total.
    const scrapes: Sample[][] = [];
    for (let n = 0; n < 4; n++) {
      const res = await onNewConnection(`${origin}/metrics`, 'GET');
      expect(res.status).toBe(200);
      scrapes.push(parseExposition(res.text));
    }
    for (const samples of scrapes) {
      expect(metricValue(samples, 'rcpgw_requests_total', { method: 'retrieve', code: '0' })).toBe(REQUESTS);
      expect(metricValue(samples, 'rcpgw_engine_calls_total', { engine: 'local', code: '0' })).toBe(REQUESTS);
      expect(metricValue(samples, 'rcpgw_request_duration_seconds_count', { method: 'retrieve' })).toBe(REQUESTS);
      expect(metricValue(samples, 'rcpgw_engine_up', { engine: 'local' })).toBe(1);
      expect(metricValue(samples, 'rcpgw_breaker_state', { engine: 'local' })).toBe(0);
      // One series per name and label set: the workers' samples were merged, not listed side by side.
      expect(samples.filter((s) => s.name === 'rcpgw_engine_up')).toHaveLength(1);
    }
  });
});
