#!/usr/bin/env node
/**
 * Shadow latency benchmark (not a test): what a shadow arm that never answers costs the primary.
 * Two gateways federate the same two fast engines; one also runs a `shadow` experiment whose
 * shadow arm is a third engine that hangs on every retrieve (test/engines/test-engine.mjs
 * `--fault hang`), sampled on every request, with its own deadline. Both are measured with the
 * same closed-loop load; the ratio of the primary's p50 and p99 with the hanging shadow to those
 * without any experiment is printed (the claim: close to 1, the shadow's deadline never shows).
 *
 *   node bench/shadow-latency.js [--seconds 5] [--connections 8] [--shadow-deadline-ms 1000] [--smoke]
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { Pool } from 'undici';
import { ROOT, startEngines, startGateway } from './lib/procs.js';

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '5' },
    connections: { type: 'string', default: '8' },
    'shadow-deadline-ms': { type: 'string', default: '1000' },
    smoke: { type: 'boolean', default: false },
  },
});
const SECONDS = values.smoke ? 0.5 : Number(values.seconds);
const CONNECTIONS = Number(values.connections);
const SHADOW_DEADLINE_MS = Number(values['shadow-deadline-ms']);

/** The test engine over HTTP, hanging on every retrieve. */
function hangingEngine() {
  const child = spawn(
    process.execPath,
    [path.join(ROOT, 'test/engines/test-engine.mjs'), '--transport', 'http', '--port', '0', '--fault', 'hang'],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  return new Promise((resolve, reject) => {
    let text = '';
    child.once('exit', (code) => reject(new Error(`hanging engine exited (${code})`)));
    child.stdout.setEncoding('utf8').on('data', (chunk) => {
      text += chunk;
      const m = /\{"listening":(\d+)\}/.exec(text);
      if (m) resolve({ child, url: `http://127.0.0.1:${m[1]}/rcp` });
    });
  });
}

/** Closed loop: `CONNECTIONS` clients, each a distinct user (assignment key), for `SECONDS`. */
async function measure(url) {
  const target = new URL(url);
  const pool = new Pool(target.origin, { connections: CONNECTIONS });
  const samples = [];
  const until = performance.now() + SECONDS * 1000;
  let n = 0;
  await Promise.all(
    Array.from({ length: CONNECTIONS }, async () => {
      while (performance.now() < until) {
        const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'retrieve', params: { query: 'retrieval ranking fusion', k: 10 } });
        const t0 = performance.now();
        const res = await pool.request({
          path: `${target.pathname.replace(/\/+$/, '')}/retrieve`,
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-rcpgw-user': `user-${n++}` },
          body,
        });
        const answer = JSON.parse(await res.body.text());
        if (!answer.result?.hits?.length) throw new Error(`bad answer: ${JSON.stringify(answer).slice(0, 300)}`);
        samples.push(performance.now() - t0);
      }
    }),
  );
  await pool.close();
  samples.sort((a, b) => a - b);
  const q = (p) => samples[Math.min(samples.length - 1, Math.floor(p * samples.length))];
  return { n: samples.length, p50: q(0.5), p99: q(0.99) };
}

async function main() {
  const fast = await startEngines(2);
  const hanging = await hangingEngine();
  const urls = [...fast.urls, hanging.url];
  // e0, e1: the fast engines (the ordinary setup and the primary arm); e2: the hanging shadow engine.
  const common = { logLevel: 'error', routes: { retrieve: ['e0', 'e1'] } };
  const none = await startGateway(urls, { gateway: common });
  const shadowed = await startGateway(urls, {
    gateway: {
      ...common,
      experiments: {
        arms: { primary: { engines: ['e0', 'e1'] }, stuck: { engines: ['e2'] } },
        list: [
          {
            id: 'stuck',
            kind: 'shadow',
            primary: 'primary',
            shadow: 'stuck',
            sample: 1,
            deadlineMs: SHADOW_DEADLINE_MS,
            maxConcurrent: 1_000,
            budgetPerMinute: 1_000_000,
          },
        ],
      },
    },
  });
  try {
    await measure(none.url); // warm-up (JIT, connections)
    await measure(shadowed.url);
    const base = await measure(none.url);
    const withShadow = await measure(shadowed.url);
    const f = (x, d = 2) => x.toFixed(d);
    console.log(
      `Shadow latency: ${CONNECTIONS} closed-loop clients × ${SECONDS} s; shadow engine hangs, shadow deadline ${SHADOW_DEADLINE_MS} ms`,
    );
    console.log('| gateway | requests | p50 ms | p99 ms |');
    console.log('| --- | ---: | ---: | ---: |');
    console.log(`| no experiment | ${base.n} | ${f(base.p50)} | ${f(base.p99)} |`);
    console.log(`| hanging shadow on every request | ${withShadow.n} | ${f(withShadow.p50)} | ${f(withShadow.p99)} |`);
    console.log(`ratio (hanging shadow ÷ none): p50 ${f(withShadow.p50 / base.p50)}, p99 ${f(withShadow.p99 / base.p99)}`);
  } finally {
    await Promise.all([none.stop(), shadowed.stop(), fast.stop()]);
    hanging.child.kill('SIGTERM');
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
