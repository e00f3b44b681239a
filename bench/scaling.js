#!/usr/bin/env node
/**
 * `npm run bench:scaling`: how the gateway's cost grows with the work a request asks for.
 *
 * Two curves, each point a saturating throughput run against real processes on loopback:
 *  - engines per request 1 → 2 → 4 → 8 (k = 10, 20 hits per engine), the gateway next to the bare
 *    fan-out ceiling (bench/lib/bare.js: parse, tag, fuse, serialise — nothing else) over the same
 *    engines, so every point also gives the gateway ÷ ceiling ratio;
 *  - k 10 → 25 → 50 → 100 over 3 engines answering 2k hits each (20 → 200 hits per engine).
 * Server CPU per request is read from /proc for the gateway's process alone. A least-squares line
 * through each curve states the constant per request, per engine and per upstream hit.
 *
 *   node bench/scaling.js [--seconds N] [--smoke] [--no-append] [--results FILE]
 *
 * --smoke: a fraction of a second per point and nothing appended (the harness cannot rot).
 */
import { appendFileSync, existsSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { throughput } from './lib/load.js';
import { cpuMs, ROOT, startBare, startEngines, startGateway } from './lib/procs.js';
import { machine } from './lib/report.js';

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '5' },
    smoke: { type: 'boolean', default: false },
    'no-append': { type: 'boolean', default: false },
    results: { type: 'string', default: path.join(ROOT, 'bench/RESULTS.md') },
  },
});
const SMOKE = values.smoke;
const PLAN = SMOKE ? { warmup: 0.1, seconds: 0.25, connections: 8 } : { warmup: 2, seconds: Number(values.seconds), connections: 32 };
const ENGINE_COUNTS = [1, 2, 4, 8];
const K_VALUES = [10, 25, 50, 100];
const K_ENGINES = 3;

if (!existsSync(path.join(ROOT, 'dist/cli/main.js'))) {
  process.stderr.write('bench: dist/cli/main.js is missing; run `npm run build` first\n');
  process.exit(2);
}
const log = (line) => process.stdout.write(`${line}\n`);

/** A retrieve for `k` hits; the answer must be a full, undegraded result. */
function target(url, k) {
  return {
    url: `${url}/retrieve`,
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'retrieve', params: { query: 'rank fusion', k } }),
    verify: (body) => body.includes('"hits":[{') && !body.includes('"degraded"') && !body.includes('"error"'),
  };
}

/** Warm-up, then a saturating run with the CPU the server process spent per answered request. */
async function point(url, pid, k) {
  await throughput(target(url, k), { connections: PLAN.connections, seconds: PLAN.warmup });
  const before = cpuMs([pid]);
  const t = await throughput(target(url, k), { connections: PLAN.connections, seconds: PLAN.seconds });
  const cpu = cpuMs([pid]) - before;
  return { rps: t.rps, bad: t.bad, cpuUsPerReq: t.requests > 0 ? (cpu * 1000) / t.requests : NaN };
}

/** Least-squares slope and intercept of y over x. */
function line(xs, ys) {
  const n = xs.length;
  const mx = xs.reduce((a, b) => a + b, 0) / n;
  const my = ys.reduce((a, b) => a + b, 0) / n;
  let sxy = 0;
  let sxx = 0;
  for (let i = 0; i < n; i++) {
    sxy += (xs[i] - mx) * (ys[i] - my);
    sxx += (xs[i] - mx) ** 2;
  }
  const slope = sxx > 0 ? sxy / sxx : NaN;
  return { slope, intercept: my - slope * mx };
}

const GATEWAY_SETTINGS = { logLevel: 'warn', maxK: 100 };

async function enginesCurve() {
  const rows = [];
  for (const count of ENGINE_COUNTS) {
    const engines = await startEngines(count);
    try {
      const gateway = await startGateway(engines.urls, { gateway: GATEWAY_SETTINGS });
      const gw = await point(gateway.url, gateway.pid, 10).finally(() => gateway.stop());
      const bare = await startBare(engines.urls);
      const ceiling = await point(bare.url, bare.pid, 10).finally(() => bare.stop());
      rows.push({ count, gw, ceiling });
      log(
        `  ${count} engine(s): gateway ${gw.rps.toFixed(0)} req/s, ${gw.cpuUsPerReq.toFixed(0)} µs CPU/req; ceiling ${ceiling.rps.toFixed(0)} req/s, ${ceiling.cpuUsPerReq.toFixed(0)} µs; gateway÷ceiling ${(gw.rps / ceiling.rps).toFixed(2)}`,
      );
    } finally {
      await engines.stop();
    }
  }
  return rows;
}

async function kCurve() {
  const rows = [];
  for (const k of K_VALUES) {
    const hits = 2 * k;
    const engines = await startEngines(K_ENGINES, { hits });
    try {
      const gateway = await startGateway(engines.urls, { gateway: GATEWAY_SETTINGS });
      const gw = await point(gateway.url, gateway.pid, k).finally(() => gateway.stop());
      rows.push({ k, hits, gw });
      log(
        `  k ${k} (${hits} hits × ${K_ENGINES} engines): ${gw.rps.toFixed(0)} req/s, ${gw.cpuUsPerReq.toFixed(0)} µs CPU/req, ${(gw.cpuUsPerReq / (hits * K_ENGINES)).toFixed(2)} µs per upstream hit`,
      );
    } finally {
      await engines.stop();
    }
  }
  return rows;
}

const info = machine();
log(`scaling bench on ${info.cpu} (${info.cores} cores), Node ${info.node}, load average ${info.loadavg}${SMOKE ? ' — smoke' : ''}`);
log('engines per request (k = 10):');
const byEngines = await enginesCurve();
log(`k (${K_ENGINES} engines, 2k hits each):`);
const byK = await kCurve();

const perEngine = line(
  byEngines.map((r) => r.count),
  byEngines.map((r) => r.gw.cpuUsPerReq),
);
const perHit = line(
  byK.map((r) => r.hits * K_ENGINES),
  byK.map((r) => r.gw.cpuUsPerReq),
);
const summary = [
  `gateway CPU per request ≈ ${perEngine.intercept.toFixed(0)} µs + ${perEngine.slope.toFixed(0)} µs per engine (k = 10, 20 hits each)`,
  `gateway CPU per request ≈ ${perHit.intercept.toFixed(0)} µs + ${perHit.slope.toFixed(2)} µs per upstream hit (${K_ENGINES} engines)`,
];
for (const s of summary) log(s);
const bad = [...byEngines.flatMap((r) => [r.gw.bad, r.ceiling.bad]), ...byK.map((r) => r.gw.bad)].reduce((a, b) => a + b, 0);
if (bad > 0) log(`warning: ${bad} answers were not full results`);

if (!SMOKE && !values['no-append']) {
  const md = ['', `## ${info.date} — scaling curves`, ''];
  md.push(
    `Machine: ${info.cpu}, ${info.cores} cores; Node ${info.node}; load average at start ${info.loadavg}; ${PLAN.seconds} s per point.`,
    '',
  );
  md.push(
    '| engines | gateway req/s | gateway CPU µs/req | ceiling req/s | ceiling CPU µs/req | gateway ÷ ceiling |',
    '| ---: | ---: | ---: | ---: | ---: | ---: |',
  );
  for (const r of byEngines) {
    md.push(
      `| ${r.count} | ${r.gw.rps.toFixed(0)} | ${r.gw.cpuUsPerReq.toFixed(0)} | ${r.ceiling.rps.toFixed(0)} | ${r.ceiling.cpuUsPerReq.toFixed(0)} | ${(r.gw.rps / r.ceiling.rps).toFixed(2)} |`,
    );
  }
  md.push('', '| k | hits per engine | req/s | CPU µs/req | µs per upstream hit |', '| ---: | ---: | ---: | ---: | ---: |');
  for (const r of byK) {
    md.push(
      `| ${r.k} | ${r.hits} | ${r.gw.rps.toFixed(0)} | ${r.gw.cpuUsPerReq.toFixed(0)} | ${(r.gw.cpuUsPerReq / (r.hits * K_ENGINES)).toFixed(2)} |`,
    );
  }
  md.push('', ...summary.map((s) => `- ${s}`));
  appendFileSync(values.results, `${md.join('\n')}\n`);
  log(`appended to ${path.relative(process.cwd(), values.results)}`);
}
process.exit(0);
