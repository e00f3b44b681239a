/**
 * Prometheus metrics after scripted traffic through a real gateway: counts by method and code,
 * latency histograms, per-engine outcomes, fan-out width, degraded legs, breaker state and
 * transitions, progress frames, SSE stream gauge, cancellations, process metrics; and the
 * separate metrics port. Every number asserted is the count of something this test did.
 */
import { describe, expect, it } from 'vitest';
import { rpc, rpcSse, methodUrl } from '../support/http-client.js';
import { GATEWAY_CLI, tmpDir, waitForEvent, writeConfig, writeControl } from '../support/processes.js';
import { StdioClient } from '../support/stdio-client.js';
import { suiteProcesses } from '../support/suite.js';
import { schemaCrossCheck } from '../support/spec-validator.js';
import { get, metricValue, origin, scrape, until } from './support.js';

const procs = suiteProcesses();
const engine = procs.engine;
const gateway = procs.gateway;

const QUERY = 'retrieval fusion ranking';

describe('metrics at /metrics on the main port', () => {
  it('count requests, engine calls, fan-out, degraded legs, breaker, progress, streams and cancellations', async () => {
    const dir = tmpDir();
    const controlA = `${dir}/a.json`;
    const controlB = `${dir}/b.json`;
    writeControl(controlA, { fault: 'ok' });
    writeControl(controlB, { fault: 'fail' });
    const a = await engine(['--id', 'a', '--control', controlA]);
    const b = await engine(['--id', 'b', '--control', controlB, '--id-prefix', 'b-']);
    const gw = await gateway({
      engines: [
        { id: 'a', transport: 'http', url: a.url },
        // A breaker that opens after two failures and stays open for the rest of the test.
        { id: 'b', transport: 'http', url: b.url, breaker: { volumeThreshold: 2, resetTimeoutMs: 60_000, maxResetTimeoutMs: 60_000 } },
      ],
    });
    const base = origin(gw.url);

    // 4 retrieves: a answers, b fails (engine error, then circuit open).
    for (let i = 0; i < 4; i++) {
      const res = await rpc(gw.url, 'retrieve', { query: QUERY, k: 3 });
      expect(res.result?._meta).toMatchObject({ engines: ['a'] });
    }
    // Lifecycle and error paths: a ping, invalid params, an undefined method.
    expect((await rpc(gw.url, 'ping', {})).result).toEqual({});
    expect((await rpc(gw.url, 'retrieve', { query: QUERY, k: 'three' })).error?.code).toBe(-32602);
    expect((await rpc(gw.url, 'bogus/thing', {})).error?.code).toBe(-32004);

    // One streamed retrieve with progress: count what the client received.
    const streamed = await rpcSse(gw.url, 'retrieve', { query: QUERY, k: 3 }, { progressToken: 'p-1' });
    expect(streamed.final?.result).toBeDefined();
    expect(streamed.progress.length).toBeGreaterThan(0);

    // A client that disconnects while engine a hangs.
    writeControl(controlA, { fault: 'hang' });
    const controller = new AbortController();
    const pending = fetch(methodUrl(gw.url, 'retrieve'), {
      method: 'POST',
      signal: controller.signal,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 'gone', method: 'retrieve', params: { query: 'cancel token stream', k: 3 } }),
    }).catch(() => 'aborted');
    await waitForEvent(
      a.eventsFile,
      (e) => e.ev === 'request' && (e.params as { query?: string } | undefined)?.query === 'cancel token stream',
    );
    controller.abort();
    expect(await pending).toBe('aborted');
    const samples = await until('the disconnect to be counted', async () => {
      const s = await scrape(base);
      return metricValue(s, 'rcpgw_cancellations_total', { trigger: 'disconnect' }) === 1 ? s : undefined;
    });
    writeControl(controlA, { fault: 'ok' });

    // Requests by method and code.
    expect(metricValue(samples, 'rcpgw_requests_total', { method: 'retrieve' })).toBe(7);
    expect(metricValue(samples, 'rcpgw_requests_total', { method: 'retrieve', code: '0' })).toBe(5);
    expect(metricValue(samples, 'rcpgw_requests_total', { method: 'retrieve', code: '-32602' })).toBe(1);
    expect(metricValue(samples, 'rcpgw_requests_total', { method: 'ping', code: '0' })).toBe(1);
    expect(metricValue(samples, 'rcpgw_requests_total', { method: 'other', code: '-32004' })).toBe(1);
    expect(metricValue(samples, 'rcpgw_request_duration_seconds_count', { method: 'retrieve' })).toBe(7);
    expect(metricValue(samples, 'rcpgw_request_duration_seconds_bucket', { method: 'retrieve', le: '+Inf' })).toBe(7);
    expect(metricValue(samples, 'rcpgw_cancellations_total')).toBe(1);

    // Fan-out: the 6 retrieves that reached it (not the invalid one) asked 2 engines each.
    expect(metricValue(samples, 'rcpgw_fanout_width_count', { method: 'retrieve' })).toBe(6);
    expect(metricValue(samples, 'rcpgw_fanout_width_sum', { method: 'retrieve' })).toBe(12);

    // Per-engine outcomes: a answered 5 and was cut off once (-32006); b never answered.
    expect(metricValue(samples, 'rcpgw_engine_calls_total', { engine: 'a', code: '0' })).toBe(5);
    expect(metricValue(samples, 'rcpgw_engine_calls_total', { engine: 'a', code: '-32006' })).toBe(1);
    expect(metricValue(samples, 'rcpgw_engine_calls_total', { engine: 'b' })).toBe(6);
    expect(metricValue(samples, 'rcpgw_engine_calls_total', { engine: 'b', code: '0' })).toBe(0);
    expect(metricValue(samples, 'rcpgw_engine_call_duration_seconds_count', { engine: 'a' })).toBe(6);

    // Degraded: b was dropped from the 5 successful answers; first for its errors, then by its breaker.
    expect(metricValue(samples, 'rcpgw_degraded_answers_total', { method: 'retrieve' })).toBe(5);
    expect(metricValue(samples, 'rcpgw_degraded_total', { engine: 'b' })).toBe(5);
    expect(metricValue(samples, 'rcpgw_degraded_total', { engine: 'b', reason: 'engine-error' })).toBeGreaterThanOrEqual(1);
    expect(metricValue(samples, 'rcpgw_degraded_total', { engine: 'b', reason: 'circuit-open' })).toBeGreaterThanOrEqual(1);
    expect(metricValue(samples, 'rcpgw_degraded_total', { engine: 'a' })).toBe(0);

    // Breaker: b opened once and is open; a closed.
    expect(metricValue(samples, 'rcpgw_breaker_transitions_total', { engine: 'b', from: 'closed', to: 'open' })).toBe(1);
    expect(metricValue(samples, 'rcpgw_breaker_state', { engine: 'b' })).toBe(2);
    expect(metricValue(samples, 'rcpgw_breaker_state', { engine: 'a' })).toBe(0);
    expect(metricValue(samples, 'rcpgw_engine_up', { engine: 'a' })).toBe(1);
    expect(metricValue(samples, 'rcpgw_engine_queue_depth', { engine: 'a' })).toBe(0);

    // b's first failure (-32603, retryable) was retried before its breaker opened; a never needed one.
    expect(metricValue(samples, 'rcpgw_retries_total', { engine: 'b' })).toBeGreaterThanOrEqual(1);
    expect(metricValue(samples, 'rcpgw_retries_total', { engine: 'a' })).toBe(0);

    // Progress frames relayed equal what the client saw; nothing is in flight or streaming now.
    expect(metricValue(samples, 'rcpgw_progress_frames_total')).toBe(streamed.progress.length);
    expect(metricValue(samples, 'rcpgw_sse_streams_open')).toBe(0);
    expect(metricValue(samples, 'rcpgw_in_flight_requests')).toBe(0);

    // Default process metrics, and nothing request-specific in any label.
    expect(samples.some((s) => s.name === 'process_cpu_user_seconds_total')).toBe(true);
    expect(samples.some((s) => s.name === 'nodejs_eventloop_lag_seconds')).toBe(true);
    const labelValues = samples.flatMap((s) => Object.values(s.labels));
    for (const forbidden of [QUERY, 'cancel token stream', 'gone', 'bogus/thing']) expect(labelValues).not.toContain(forbidden);
    expect(labelValues.some((v) => /^b-d\d+$|^d\d+$/.test(v))).toBe(false); // no hit ids
  });

  it('counts an open SSE stream while it is open', async () => {
    const dir = tmpDir();
    const control = `${dir}/c.json`;
    writeControl(control, { fault: 'hang' });
    const e = await engine(['--id', 'slowpoke', '--control', control]);
    const gw = await gateway({ engines: [{ id: 'slowpoke', transport: 'http', url: e.url }] });
    const base = origin(gw.url);
    const stream = rpcSse(gw.url, 'retrieve', { query: QUERY, k: 2, _meta: { deadlineMs: 20_000 } }, { progressToken: 7 });
    await waitForEvent(e.eventsFile, (ev) => ev.ev === 'request' && ev.method === 'retrieve');
    const during = await scrape(base);
    expect(metricValue(during, 'rcpgw_sse_streams_open')).toBe(1);
    expect(metricValue(during, 'rcpgw_in_flight_requests')).toBe(1);
    expect(metricValue(during, 'rcpgw_engine_active_calls', { engine: 'slowpoke' })).toBe(1);
    // End the hung call from the engine side: the engine goes away, the leg fails, the stream ends.
    await e.stop();
    const reply = await stream;
    expect(reply.final).toBeDefined();
    const after = await until('the stream to close', async () => {
      const s = await scrape(base);
      return metricValue(s, 'rcpgw_sse_streams_open') === 0 ? s : undefined;
    });
    expect(metricValue(after, 'rcpgw_in_flight_requests')).toBe(0);
  });
});

describe('metrics on a separate port', () => {
  it('serves /metrics only on gateway.metrics.port, health on both', async () => {
    const e = await engine(['--id', 'solo']);
    const gw = await gateway({ engines: [{ id: 'solo', transport: 'http', url: e.url }], gateway: { metrics: { port: 0 } } });
    const m = /metrics on (http:\/\/[^\s]+)\/metrics/.exec(gw.stderr());
    expect(m).not.toBeNull();
    const opsOrigin = m![1]!;
    await rpc(gw.url, 'retrieve', { query: QUERY, k: 2 });
    const main = await get(`${origin(gw.url)}/metrics`);
    expect(main.status).toBe(404);
    const res = await get(`${opsOrigin}/metrics`);
    expect(res.status).toBe(200);
    expect(res.contentType).toContain('text/plain');
    expect(res.text).toContain('rcpgw_requests_total{method="retrieve",code="0"} 1');
    for (const at of [origin(gw.url), opsOrigin]) {
      expect((await get(`${at}/healthz`)).status).toBe(200);
      expect((await get(`${at}/readyz`)).status).toBe(200);
    }
    expect((await get(`${opsOrigin}/nope`)).status).toBe(404);
  });
});

describe('metrics of a stdio gateway', () => {
  it('are served on gateway.metrics.port and count client cancels', async () => {
    const dir = tmpDir();
    const control = `${dir}/hang.json`;
    writeControl(control, { fault: 'hang' });
    const e = await engine(['--id', 'hang', '--control', control]);
    const configFile = writeConfig(dir, { engines: [{ id: 'hang', transport: 'http', url: e.url }], gateway: { metrics: { port: 0 } } });
    const client = new StdioClient([process.execPath, GATEWAY_CLI, 'stdio', '--config', configFile]);
    procs.defer(async () => client.kill());
    const ops = (await client.waitForStderr(/metrics on (http:\/\/\S+)\/metrics/))[1]!;
    await client.request('initialize', { protocolVersion: 1, client: { name: 'metrics-test', version: '0' }, capabilities: {} });
    const answer = client.request('retrieve', { query: QUERY, k: 2 }, 'to-cancel');
    await waitForEvent(e.eventsFile, (ev) => ev.ev === 'request' && ev.method === 'retrieve');
    client.notify('notifications/cancel', { id: 'to-cancel' });
    expect((await answer).error?.code).toBe(-32006);
    const samples = await until('the cancel to be counted', async () => {
      const s = await scrape(ops);
      return metricValue(s, 'rcpgw_cancellations_total', { trigger: 'cancel' }) === 1 ? s : undefined;
    });
    expect(metricValue(samples, 'rcpgw_requests_total', { method: 'retrieve', code: '-32006' })).toBe(1);
    expect(metricValue(samples, 'rcpgw_requests_total', { method: 'initialize', code: '0' })).toBe(1);
    expect(await client.close()).toBe(0);
    expect(client.violations).toEqual([]);
  });
});

schemaCrossCheck();
