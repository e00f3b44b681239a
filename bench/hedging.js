#!/usr/bin/env node
/**
 * Hedging benchmark (not a test): one engine served by three replicas whose latency has a tail
 * (a share of requests takes 20× the usual time), behind two gateways started from dist/ — one
 * balancing the replicas without hedging, one hedging reads at the engine's observed p95 within
 * a 5 % budget. Both send the same number of retrieves; figures: p50/p99/p99.9 of each, the
 * hedged ÷ unhedged p99 ratio, and the extra upstream load the hedges cost, counted by the
 * replicas themselves (their --events files). Appended to bench/RESULTS.md.
 *
 *   node bench/hedging.js [--requests 2000] [--connections 4] [--base-ms 10] [--tail-rate 0.02]
 *                         [--tail-replicas 3] [--budget 0.05] [--smoke] [--no-append]
 *
 * Why the tail is on every replica by default: with one tailing replica of three, the slow
 * requests are a third of its tail rate overall, so at a 1 % tail they sit beyond the p99 and
 * hedging would have nothing to show there. `--tail-replicas 1 --tail-rate 0.03` runs that shape.
 */
import { spawn } from 'node:child_process';
import { appendFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Pool } from 'undici';
import { simulateHedging } from './lib/hedging-sim.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const ENGINE = path.join(ROOT, 'test/engines/test-engine.mjs');
const GATEWAY = path.join(ROOT, 'dist/cli/main.js');

const { values } = parseArgs({
  options: {
    requests: { type: 'string', default: '2000' },
    connections: { type: 'string', default: '4' },
    'base-ms': { type: 'string', default: '10' },
    'tail-rate': { type: 'string', default: '0.02' },
    'tail-replicas': { type: 'string', default: '3' },
    budget: { type: 'string', default: '0.05' },
    smoke: { type: 'boolean', default: false },
    'no-append': { type: 'boolean', default: false },
    results: { type: 'string', default: path.join(ROOT, 'bench/RESULTS.md') },
  },
});
const REQUESTS = values.smoke ? 100 : Number(values.requests);
const WARMUP = values.smoke ? 40 : 200;
const CONNECTIONS = Number(values.connections);
const BASE_MS = Number(values['base-ms']);
const TAIL_MS = BASE_MS * 20;
const TAIL_RATE = Number(values['tail-rate']);
const TAIL_REPLICAS = Number(values['tail-replicas']);
const BUDGET = Number(values.budget);
const tmp = mkdtempSync(path.join(os.tmpdir(), 'rcp-bench-hedging-'));
const children = new Set();
process.once('exit', () => {
  for (const child of children) child.kill('SIGKILL');
  rmSync(tmp, { recursive: true, force: true });
});

/** Spawn `args` with node; resolve with the first stdout/stderr match of `re`. */
function start(args, re, what) {
  const child = spawn(process.execPath, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  children.add(child);
  child.once('exit', () => children.delete(child));
  let text = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${what} did not start:\n${text.slice(-2000)}`)), 20_000);
    const onData = (chunk) => {
      text = (text + chunk).slice(-20_000);
      const m = text.match(re);
      if (m) {
        clearTimeout(timer);
        resolve({ child, match: m });
      }
    };
    child.stdout.setEncoding('utf8').on('data', onData);
    child.stderr.setEncoding('utf8').on('data', onData);
    child.once('exit', (code) => reject(new Error(`${what} exited (${code}):\n${text.slice(-2000)}`)));
  });
}

function stop(child) {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
    setTimeout(() => child.kill('SIGKILL'), 5_000).unref();
  });
}

async function replica(i) {
  const events = path.join(tmp, `replica-${i}.ndjson`);
  const tail = i < TAIL_REPLICAS ? ['--tail-rate', String(TAIL_RATE), '--tail-delay-ms', String(TAIL_MS - BASE_MS)] : [];
  const args = [ENGINE, '--transport', 'http', '--port', '0', '--id', 'rep', '--seed', String(11 + i), '--events', events];
  const { child, match } = await start(
    [...args, '--fault', 'slow', '--delay-ms', String(BASE_MS), ...tail],
    /\{"listening":(\d+)\}/,
    `replica ${i}`,
  );
  return { child, events, url: `http://127.0.0.1:${match[1]}/rcp` };
}

/** Retrieves a replica has received so far (its own count, from its events file). */
function received(replicaHandle) {
  return readFileSync(replicaHandle.events, 'utf8')
    .split('\n')
    .filter((line) => line.includes('"ev":"request"') && line.includes('"method":"retrieve"')).length;
}

async function gateway(name, urls, hedge) {
  const file = path.join(tmp, `${name}.json`);
  writeFileSync(
    file,
    JSON.stringify({
      engines: [{ id: 'rep', transport: 'http', urls, ...(hedge ? { hedge } : {}) }],
      // No retries: the figures are about hedging alone.
      gateway: { logLevel: 'error', retry: { budgetRatio: 0, minPerWindow: 0, windowMs: 10_000 } },
    }),
  );
  const { child, match } = await start(
    [GATEWAY, 'serve', '--config', file, '--port', '0'],
    /listening on (http:\/\/\S+)/,
    `gateway ${name}`,
  );
  return { child, url: match[1] };
}

const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'retrieve', params: { query: 'retrieval ranking fusion vector', k: 10 } });

async function rpc(pool, basePath, method, payload) {
  const res = await pool.request({
    path: `${basePath}/${method}`,
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: payload,
  });
  return JSON.parse(await res.body.text());
}

/** `count` retrieves over `CONNECTIONS` closed-loop clients; their latencies in ms. */
async function run(url, count) {
  const target = new URL(url);
  const pool = new Pool(target.origin, { connections: CONNECTIONS });
  const basePath = target.pathname.replace(/\/+$/, '');
  const samples = [];
  let sent = 0;
  await Promise.all(
    Array.from({ length: CONNECTIONS }, async () => {
      while (sent < count) {
        sent += 1;
        const t0 = performance.now();
        const answer = await rpc(pool, basePath, 'retrieve', body);
        if (!answer.result || !Array.isArray(answer.result.hits) || answer.result.hits.length === 0)
          throw new Error(`bad answer: ${JSON.stringify(answer).slice(0, 300)}`);
        samples.push(performance.now() - t0);
      }
    }),
  );
  await pool.close();
  return samples;
}

/** The engine's hedge counts, from its catalog/list entry. */
async function hedgeCounts(url) {
  const target = new URL(url);
  const pool = new Pool(target.origin, { connections: 1 });
  const catalog = await rpc(
    pool,
    target.pathname.replace(/\/+$/, ''),
    'catalog/list',
    JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'catalog/list', params: {} }),
  );
  await pool.close();
  return catalog.result.engines[0]._meta['x-rcpgw'].hedges;
}

function stats(samples) {
  const sorted = [...samples].sort((a, b) => a - b);
  const q = (p) => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))];
  return { n: sorted.length, p50: q(0.5), p99: q(0.99), p999: q(0.999), slow: sorted.filter((ms) => ms >= TAIL_MS).length };
}

/**
 * Both gateways in alternating rounds, so a change in the machine's load hits both alike. Each
 * gateway's warm-up (JIT, connections, and the hedging gateway's p95) counts towards its
 * upstream requests: the hedge budget is earned and spent over the gateway's whole life.
 */
async function measureBoth(gateways, replicas) {
  const totalReceived = () => replicas.reduce((sum, r) => sum + received(r), 0);
  const arms = gateways.map(() => ({ samples: [], upstream: 0 }));
  const rounds = values.smoke ? 2 : 10;
  const plan = [WARMUP, ...Array.from({ length: rounds }, () => Math.ceil(REQUESTS / rounds))];
  for (const [round, count] of plan.entries()) {
    for (const [i, gw] of gateways.entries()) {
      const before = totalReceived();
      const samples = await run(gw.url, count);
      arms[i].upstream += totalReceived() - before;
      if (round > 0) arms[i].samples.push(...samples);
    }
  }
  return Promise.all(
    arms.map(async (arm, i) => ({
      ...stats(arm.samples),
      reads: WARMUP + arm.samples.length,
      upstream: arm.upstream,
      hedges: await hedgeCounts(gateways[i].url),
    })),
  );
}

/** The figures of one pair of runs (without, with hedging) as markdown table lines. */
function table(without, withHedges) {
  const f = (x, d = 1) => (Number.isFinite(x) ? x.toFixed(d) : 'n/a');
  const extra = (r) => (r.upstream - r.reads) / r.reads;
  const ratio = withHedges.p99 / without.p99;
  const h = withHedges.hedges;
  const row = (name, r, hedges) =>
    `| ${name} | ${r.n} | ${r.reads} | ${r.upstream} | ${f(extra(r) * 100)} % | ${f(r.p50)} | ${f(r.p99)} | ${f(r.p999)} | ${r.slow} | ${hedges} |`;
  return [
    `| gateway | measured | reads (with warm-up) | upstream requests | extra load | p50 ms | p99 ms | p99.9 ms | ≥ ${TAIL_MS} ms | hedges sent / won / lost / denied |`,
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |',
    row('balanced, no hedging', without, '—'),
    row(
      `balanced + hedging (p95, budget ${BUDGET})`,
      withHedges,
      `${h.sent} / ${h.won} / ${h.lost} / ${h.denied} (delay ${f(h.delayMs)} ms)`,
    ),
    '',
    `| ratio | value | target | verdict |`,
    '| --- | ---: | ---: | --- |',
    `| hedged p99 ÷ unhedged p99 | ${f(ratio, 2)} | ≤ 0.2 | ${ratio <= 0.2 ? 'met' : 'missed'} |`,
    `| extra upstream requests (hedged) | ${f(extra(withHedges) * 100)} % | ≤ ${BUDGET * 100} % | ${extra(withHedges) <= BUDGET ? 'met' : 'missed'} |`,
  ];
}

async function main() {
  const replicas = await Promise.all([0, 1, 2].map(replica));
  const urls = replicas.map((r) => r.url);
  const plain = await gateway('unhedged', urls, undefined);
  const hedged = await gateway('hedged', urls, { budget: BUDGET });
  const [without, withHedges] = await measureBoth([plain, hedged], replicas);
  await Promise.all([plain, hedged, ...replicas].map((p) => stop(p.child)));
  const simulated = await simulateHedging(ROOT, {
    baseMs: BASE_MS,
    tailMs: TAIL_MS,
    tailRate: TAIL_RATE,
    tailReplicas: TAIL_REPLICAS,
    budget: BUDGET,
    requests: REQUESTS,
    warmup: WARMUP,
    connections: CONNECTIONS,
    stats,
  });
  const cpu = os.cpus()[0]?.model.trim() ?? 'unknown';
  const load = os
    .loadavg()
    .map((x) => x.toFixed(2))
    .join(' ');
  const text = [
    `## Hedging — ${new Date().toISOString().replace(/\.\d+Z$/, 'Z')}`,
    '',
    `\`node bench/hedging.js\`: one engine, 3 replicas (${BASE_MS} ms per retrieve; ${TAIL_REPLICAS} of them with a ` +
      `${TAIL_RATE * 100} % tail at ${TAIL_MS} ms = 20×); ${REQUESTS} retrieves per gateway over ${CONNECTIONS} closed-loop ` +
      `clients after ${WARMUP} warm-up each. Machine: ${cpu}, ${os.availableParallelism()} cores, Node ${process.version}, ` +
      `load average ${load}.`,
    '',
    'Real processes: two gateways from dist/ (without and with `hedge`) in alternating rounds over three test engines over HTTP; upstream requests counted by the engines.',
    '',
    ...table(without, withHedges),
    '',
    'The policy alone, in process: the same replica set class over three simulated replicas (timers), so machine load does not swamp the figures.',
    '',
    ...table(...simulated),
    '',
  ].join('\n');
  process.stdout.write(`\n${text}\n`);
  if (!values.smoke && !values['no-append']) appendFileSync(values.results, `\n${text}`);
}

main().catch((err) => {
  process.stderr.write(`bench/hedging: ${err.stack ?? err}\n`);
  process.exit(1);
});
