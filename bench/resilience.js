#!/usr/bin/env node
/**
 * Resilience benchmark (not a test): what one hanging engine costs a 3-engine federated
 * retrieve, with its circuit breaker closed (every call waits for the leg deadline) and open
 * (the engine is skipped at once), against the all-healthy case. Figures are p50/p99 latency
 * printed as ratios to the configured deadline and to the all-healthy case, and appended to
 * bench/RESULTS.md.
 *
 *   node bench/resilience.js [--seconds 5] [--connections 8] [--deadline-ms 500] [--smoke] [--no-append]
 *
 * Processes: three test engines over HTTP (test/engines/test-engine.mjs; the third is flipped to
 * `hang` through its --control file) and two gateways started from dist/ as a user would: one
 * with the normal breaker, one whose breaker can never open (volumeThreshold 10^9), so "closed"
 * really means every call pays for the hanging leg.
 */
import { spawn } from 'node:child_process';
import { appendFileSync, mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Pool } from 'undici';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const ENGINE = path.join(ROOT, 'test/engines/test-engine.mjs');
const GATEWAY = path.join(ROOT, 'dist/cli/main.js');

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '5' },
    connections: { type: 'string', default: '8' },
    'deadline-ms': { type: 'string', default: '500' },
    smoke: { type: 'boolean', default: false },
    'no-append': { type: 'boolean', default: false },
    results: { type: 'string', default: path.join(ROOT, 'bench/RESULTS.md') },
  },
});
const SECONDS = values.smoke ? 0.5 : Number(values.seconds);
const CONNECTIONS = Number(values.connections);
const DEADLINE_MS = Number(values['deadline-ms']);
const tmp = mkdtempSync(path.join(os.tmpdir(), 'rcp-bench-resilience-'));
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
      text += chunk;
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

async function engine(id, extra = []) {
  const { child, match } = await start(
    [ENGINE, '--transport', 'http', '--port', '0', '--id', id, '--id-prefix', `${id}-`, ...extra],
    /\{"listening":(\d+)\}/,
    `engine ${id}`,
  );
  return { child, url: `http://127.0.0.1:${match[1]}/rcp` };
}

async function gateway(name, engines, breaker) {
  const file = path.join(tmp, `${name}.json`);
  writeFileSync(
    file,
    JSON.stringify({
      engines: engines.map((e, i) => ({ id: `e${i + 1}`, transport: 'http', url: e.url })),
      gateway: {
        deadlineMs: DEADLINE_MS,
        logLevel: 'error',
        breaker,
        // Legs end at the deadline: no time for a retry, and none wanted in the figures.
        retry: { budgetRatio: 0, minPerWindow: 0, windowMs: 10_000 },
      },
    }),
  );
  const { child, match } = await start(
    [GATEWAY, 'serve', '--config', file, '--port', '0'],
    /listening on (http:\/\/\S+)/,
    `gateway ${name}`,
  );
  return { child, url: match[1] };
}

function setControl(file, obj) {
  writeFileSync(`${file}.tmp`, JSON.stringify(obj));
  renameSync(`${file}.tmp`, file);
}

const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'retrieve', params: { query: 'retrieval ranking fusion vector', k: 10 } });

/** One retrieve; returns its latency in ms and what the answer said about the hanging engine. */
async function once(pool, basePath) {
  const t0 = performance.now();
  const res = await pool.request({ path: `${basePath}/retrieve`, method: 'POST', headers: { 'content-type': 'application/json' }, body });
  const text = await res.body.text();
  const ms = performance.now() - t0;
  const answer = JSON.parse(text);
  if (!answer.result || !Array.isArray(answer.result.hits) || answer.result.hits.length === 0)
    throw new Error(`bad answer: ${text.slice(0, 300)}`);
  const degraded = answer.result._meta?.degraded ?? [];
  return { ms, skipped: degraded.some((d) => d.reason === 'circuit-open'), timedOut: degraded.some((d) => d.reason === 'timeout') };
}

/** Closed loop: `CONNECTIONS` clients, each sending one request after the other, for `SECONDS`. */
async function measure(url) {
  const target = new URL(url);
  const pool = new Pool(target.origin, { connections: CONNECTIONS });
  const basePath = target.pathname.replace(/\/+$/, '');
  const samples = [];
  let skipped = 0;
  let timedOut = 0;
  const until = performance.now() + SECONDS * 1000;
  await Promise.all(
    Array.from({ length: CONNECTIONS }, async () => {
      while (performance.now() < until) {
        const r = await once(pool, basePath);
        samples.push(r.ms);
        if (r.skipped) skipped++;
        if (r.timedOut) timedOut++;
      }
    }),
  );
  await pool.close();
  samples.sort((a, b) => a - b);
  const q = (p) => samples[Math.min(samples.length - 1, Math.floor(p * samples.length))];
  return { n: samples.length, p50: q(0.5), p99: q(0.99), skipped, timedOut };
}

async function main() {
  const control = path.join(tmp, 'control.json');
  setControl(control, { fault: 'ok' });
  const engines = await Promise.all([engine('e1'), engine('e2'), engine('e3', ['--control', control])]);
  // Normal breaker (opens after 5 calls at ≥ 50 % failures) with a long reset, so it stays open while measured.
  const normal = await gateway('normal', engines, { volumeThreshold: 5, resetTimeoutMs: 600_000, maxResetTimeoutMs: 600_000 });
  const neverOpens = await gateway('never-opens', engines, { volumeThreshold: 1_000_000_000 });

  await measure(normal.url); // warm-up (JIT, connections)
  const healthy = await measure(normal.url);

  setControl(control, { fault: 'hang' });
  const closed = await measure(neverOpens.url);
  // Trip the normal gateway's breaker, then measure with it open.
  const target = new URL(normal.url);
  const pool = new Pool(target.origin, { connections: 1 });
  for (let i = 0; i < 20 && !(await once(pool, target.pathname)).skipped; i++);
  await pool.close();
  const open = await measure(normal.url);

  const rows = [
    ['all healthy', healthy],
    ['1 of 3 hangs, breaker closed', closed],
    ['1 of 3 hangs, breaker open', open],
  ];
  const f = (x, d = 2) => x.toFixed(d);
  const lines = [
    '| scenario | requests | p50 ms | p99 ms | p50 ÷ deadline | p99 ÷ deadline | p50 ÷ healthy p50 | p99 ÷ healthy p99 | hanging leg |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |',
    ...rows.map(
      ([name, r]) =>
        `| ${name} | ${r.n} | ${f(r.p50, 1)} | ${f(r.p99, 1)} | ${f(r.p50 / DEADLINE_MS)} | ${f(r.p99 / DEADLINE_MS)} | ${f(r.p50 / healthy.p50)} | ${f(r.p99 / healthy.p99)} | ` +
        `${r.timedOut ? `timed out ×${r.timedOut}` : r.skipped ? `skipped (circuit-open) ×${r.skipped}` : '—'} |`,
    ),
  ];
  const cpu = os.cpus()[0]?.model.trim() ?? 'unknown';
  const header =
    `## Resilience — ${new Date().toISOString().replace(/\.\d+Z$/, 'Z')}\n\n` +
    `\`node bench/resilience.js\`: 3 test engines over HTTP, one flipped to \`hang\`; gateway deadline ${DEADLINE_MS} ms; ` +
    `${CONNECTIONS} closed-loop clients × ${SECONDS} s per scenario. Machine: ${cpu}, ${os.availableParallelism()} cores, ` +
    `Node ${process.version}, load average ${os
      .loadavg()
      .map((x) => x.toFixed(2))
      .join(' ')}.\n`;
  const text = `${header}\n${lines.join('\n')}\n`;
  process.stdout.write(`\n${text}\n`);
  if (!values.smoke && !values['no-append']) appendFileSync(values.results, `\n${text}`);

  await Promise.all([normal, neverOpens, ...engines].map((p) => stop(p.child)));
}

main().catch((err) => {
  process.stderr.write(`bench/resilience: ${err.stack ?? err}\n`);
  process.exit(1);
});
