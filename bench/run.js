#!/usr/bin/env node
/**
 * `npm run bench`: every scenario against processes on loopback, figures printed and appended
 * to bench/RESULTS.md. See README.md (Performance).
 *
 *   node bench/run.js [--smoke] [--only A,B,D1,F1,C,D,F,E,C2,mem,fusion] [--label TEXT] [--seconds N]
 *                     [--gateway JSON] [--cli PATH/cli.js] [--no-append] [--results FILE]
 *
 * --smoke runs every scenario for a fraction of a second (and 50 SSE streams instead of 1,000),
 * prints the same figures and appends nothing: `npm test` runs it so the harness cannot rot.
 */
import { existsSync } from 'node:fs';
import { fetch } from 'undici';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { fusionBench } from './lib/fusion.js';
import { latency, throughput } from './lib/load.js';
import { sseMemory } from './lib/memory.js';
import { cpuMs, GC_HOOK_ARGS, processTree, ROOT, startBare, startEngines, startGateway, startSpecFloor } from './lib/procs.js';
import { appendResults, machine, printTable, ratioLines, rowsOf } from './lib/report.js';

const { values } = parseArgs({
  options: {
    smoke: { type: 'boolean', default: false },
    only: { type: 'string' },
    label: { type: 'string' },
    seconds: { type: 'string' },
    'no-append': { type: 'boolean', default: false },
    /** Extra gateway settings (JSON) for every gateway the run starts, e.g. '{"logLevel":"warn"}'. */
    gateway: { type: 'string', default: '{}' },
    /** Another build's cli.js to benchmark (A/B comparisons); default dist/cli/main.js. */
    cli: { type: 'string' },
    results: { type: 'string', default: path.join(ROOT, 'bench/RESULTS.md') },
  },
});
const SMOKE = values.smoke;
const WANTED = new Set((values.only ?? 'A,B,D1,F1,C,D,F,E,C2,mem,fusion').split(',').map((s) => s.trim()));
const seconds = Number(values.seconds ?? 10);
const PLAN = SMOKE
  ? { warmup: 0.1, seconds: 0.25, latencySeconds: 0.25, sampleInt: 50, connections: 8, latencyConnections: 4, streams: 50, fusionMs: 100 }
  : // 20 s of warm-up in 2 s slices, each on new connections as the measured load's are: the gateway's
    // JIT settles in ~10 s on the same connections but ~20 s when they are renewed (a reconnect
    // deoptimises code bound to the old connections' maps; docs/performance.md, stops 37–39), the
    // bare proxy within 1 s, and what is compared is the settled cost. With one 6 s warm-up the
    // measured 10 s on new connections began unsettled.
    {
      warmup: 20,
      warmupSlice: 2,
      // The memory run warms gently and briefly (see there).
      memoryWarmup: 6,
      seconds,
      latencySeconds: seconds,
      sampleInt: 250,
      connections: 50,
      latencyConnections: 8,
      streams: 1000,
      fusionMs: 4000,
    };
/** The memory run holds 1,000 calls open from one address: lift the gateway's admission, per-address, per-engine and deadline limits. */
const GATEWAY = JSON.parse(values.gateway);
const CLI = values.cli ? { cli: path.resolve(values.cli) } : {};
const MEMORY_GATEWAY = {
  ...GATEWAY,
  maxInFlight: 4096,
  maxConnectionsPerIp: 4096,
  maxConcurrentPerEngine: 2048,
  maxQueuePerEngine: 2048,
  deadlineMs: 120_000,
  engineTimeoutMs: 120_000,
};

if (!existsSync(path.join(ROOT, 'dist/cli/main.js'))) {
  process.stderr.write('bench: dist/cli/main.js is missing; run `npm run build` first (or `npm run bench`, which builds)\n');
  process.exit(2);
}

const log = (line) => process.stdout.write(`${line}\n`);
const retrieveBody = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'retrieve', params: { query: 'rank fusion', k: 10 } });
const sseBody = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'retrieve',
  params: { query: 'rank fusion', k: 10, _meta: { progressToken: 'bench' } },
});
const fullAnswer = (body) => body.includes('"hits":[{') && !body.includes('"degraded"') && !body.includes('"error"');
const sseAnswer = (body) => fullAnswer(body) && body.includes('notifications/progress');

/** One real request before the load: a scenario that answers errors fast must not look fast. */
async function probe(target) {
  const res = await fetch(target.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...target.headers },
    body: target.body,
  });
  const text = await res.text();
  if (res.status !== 200 || !target.verify(text)) throw new Error(`probe of ${target.url} got HTTP ${res.status}: ${text.slice(0, 300)}`);
}

/** Warm-up (discarded), saturating throughput with CPU accounting, then latency at ~50 % of it. */
async function measure(label, target, serverPids) {
  await probe(target);
  for (let left = PLAN.warmup; left > 0; left -= PLAN.warmupSlice ?? left) {
    await throughput(target, {
      connections: PLAN.connections,
      seconds: Math.min(left, PLAN.warmupSlice ?? left),
      sampleInt: PLAN.sampleInt,
    });
  }
  const pids = serverPids();
  const cpuBefore = cpuMs(pids);
  const loadBefore = process.cpuUsage();
  const t = await throughput(target, { connections: PLAN.connections, seconds: PLAN.seconds, sampleInt: PLAN.sampleInt });
  const cpu = cpuMs(pids) - cpuBefore;
  const load = process.cpuUsage(loadBefore);
  const l = await latency(target, {
    rate: t.rps * 0.5,
    connections: PLAN.latencyConnections,
    seconds: PLAN.latencySeconds,
    sampleInt: PLAN.sampleInt,
  });
  const result = {
    label,
    rps: t.rps,
    bad: t.bad + l.bad,
    p50: l.p50,
    p99: l.p99,
    p999: l.p999,
    offered: l.offered,
    cpuUsPerReq: t.requests > 0 ? (cpu * 1000) / t.requests : NaN,
    loadCpuUsPerReq: t.requests > 0 ? (load.user + load.system) / t.requests : NaN,
  };
  log(
    `  ${label}: ${result.rps.toFixed(0)} req/s; p50 ${result.p50.toFixed(2)} ms, p99 ${result.p99.toFixed(2)} ms, p99.9 ${result.p999.toFixed(2)} ms at ${l.offered.toFixed(0)} req/s; server CPU ${result.cpuUsPerReq.toFixed(0)} µs/req; bad ${result.bad}`,
  );
  return result;
}

async function guarded(results, label, fn) {
  try {
    const result = await fn();
    if (result) results.push(result);
    return result;
  } catch (err) {
    const error = err instanceof Error ? err.message : String(err);
    log(`  ${label}: FAILED — ${error.split('\n').slice(0, 12).join('\n    ')}`);
    results.push({ label, error });
    return undefined;
  }
}

async function main() {
  const info = machine();
  log(
    `rcp-gateway benchmark${SMOKE ? ' (smoke)' : ''} — ${info.cpu}, ${info.cores} cores, Node ${info.node}, ${info.date}, load ${info.loadavg}`,
  );
  const results = [];
  const ratios = {};
  const extra = [];

  if (WANTED.has('fusion')) {
    log('fusion microbenchmark: RRF over 5 engines × 1,000 hits vs JSON.parse of the same hits');
    const f = await fusionBench({ totalMs: PLAN.fusionMs, ...(values.cli ? { distDir: path.dirname(path.resolve(values.cli)) } : {}) });
    ratios['fusion÷parse'] = f.ratio;
    log(`  fusion ${f.fuseMs.toFixed(3)} ms, parse ${f.parseMs.toFixed(3)} ms (k = ${f.k})`);
    extra.push(
      `fusion microbenchmark: RRF 5×1000 → top ${f.k} in ${f.fuseMs.toFixed(3)} ms; JSON.parse of the same hits ${f.parseMs.toFixed(3)} ms`,
    );
  }

  const engines = await startEngines(3);
  const engine0 = [engines.urls[0]];
  const enginePids = () => [engines.pid];
  const byLabel = {};
  const target = (url, sse = false) => ({
    url: `${url}/retrieve`,
    body: sse ? sseBody : retrieveBody,
    headers: sse ? { accept: 'text/event-stream' } : {},
    verify: sse ? sseAnswer : fullAnswer,
  });
  try {
    if (WANTED.has('A')) {
      byLabel.A = await guarded(results, 'A client → engine', () => measure('A client → engine', target(engines.urls[0]), enginePids));
    }
    if (WANTED.has('B')) {
      byLabel.B = await guarded(results, 'B client → gateway → 1 engine', async () => {
        const gw = await startGateway(engine0, { ...CLI, gateway: GATEWAY });
        try {
          return await measure('B client → gateway → 1 engine', target(gw.url), () => processTree(gw.pid));
        } finally {
          await gw.stop();
        }
      });
    }
    if (WANTED.has('D1')) {
      byLabel.D1 = await guarded(results, 'D1 bare proxy → 1 engine', async () => {
        const bare = await startBare(engine0);
        try {
          return await measure('D1 bare proxy → 1 engine', target(bare.url), () => [bare.pid]);
        } finally {
          await bare.stop();
        }
      });
    }
    if (WANTED.has('F1')) {
      byLabel.F1 = await guarded(results, 'F1 spec floor → 1 engine', async () => {
        const floor = await startSpecFloor(engine0);
        try {
          return await measure('F1 spec floor → 1 engine', target(floor.url), () => [floor.pid]);
        } finally {
          await floor.stop();
        }
      });
    }
    if (WANTED.has('F')) {
      byLabel.F = await guarded(results, 'F spec floor → 3 engines', async () => {
        const floor = await startSpecFloor(engines.urls);
        try {
          return await measure('F spec floor → 3 engines', target(floor.url), () => [floor.pid]);
        } finally {
          await floor.stop();
        }
      });
    }
    if (WANTED.has('C') || WANTED.has('E')) {
      const gw = await startGateway(engines.urls, { ...CLI, gateway: GATEWAY });
      try {
        if (WANTED.has('C')) {
          byLabel.C = await guarded(results, 'C client → gateway → 3 engines', () =>
            measure('C client → gateway → 3 engines', target(gw.url), () => processTree(gw.pid)),
          );
        }
        if (WANTED.has('D')) {
          byLabel.D = await guarded(results, 'D bare fan-out ceiling → 3 engines', async () => {
            const bare = await startBare(engines.urls);
            try {
              return await measure('D bare fan-out ceiling → 3 engines', target(bare.url), () => [bare.pid]);
            } finally {
              await bare.stop();
            }
          });
        }
        if (WANTED.has('E')) {
          byLabel.E = await guarded(results, 'E SSE, progress relayed, 3 engines', () =>
            measure('E SSE, progress relayed, 3 engines', target(gw.url, true), () => processTree(gw.pid)),
          );
        }
      } finally {
        await gw.stop();
      }
    }
    if (WANTED.has('C2')) {
      byLabel.C2 = await guarded(results, 'C with --workers 2', async () => {
        const gw = await startGateway(engines.urls, { ...CLI, gateway: GATEWAY, workers: 2 });
        try {
          return await measure('C with --workers 2', target(gw.url), () => processTree(gw.pid));
        } finally {
          await gw.stop();
        }
      });
    }
    if (WANTED.has('mem')) {
      await guarded(results, 'memory', async () => {
        const memFile = path.join(os.tmpdir(), `rcp-bench-memory-${process.pid}.json`);
        const gw = await startGateway(engines.urls, {
          ...CLI,
          gateway: MEMORY_GATEWAY,
          nodeArgs: GC_HOOK_ARGS,
          env: { RCPGW_BENCH_MEMFILE: memFile },
        });
        try {
          // Warm the code paths gently (a saturating burst would leave a heap grown far past the
          // baseline, which the streams then fill unseen); the baseline is taken after that.
          await throughput(target(gw.url, true), { connections: 4, seconds: PLAN.memoryWarmup ?? PLAN.warmup, sampleInt: PLAN.sampleInt });
          const m = await sseMemory({ gatewayUrl: gw.url, gatewayPid: gw.pid, memFile, engines, engineCount: 3, streams: PLAN.streams });
          ratios['KB per SSE stream'] = m.perStream / 1024;
          const line = `memory: ${m.streams} open SSE streams (3 legs each): RSS ${(m.before / 2 ** 20).toFixed(1)} → ${(m.during / 2 ** 20).toFixed(1)} MiB, ${(m.perStream / 1024).toFixed(1)} KB per stream (live JS heap + external ${(m.livePerStream / 1024).toFixed(1)} KB per stream)`;
          log(`  ${line}`);
          extra.push(line);
          return undefined;
        } finally {
          await gw.stop();
        }
      });
    }
  } finally {
    await engines.stop();
  }

  const ratio = (a, b) => (byLabel[a] && byLabel[b] ? byLabel[a].rps / byLabel[b].rps : NaN);
  ratios['B÷A'] = ratio('B', 'A');
  ratios['B÷D1'] = ratio('B', 'D1');
  ratios['C÷D'] = ratio('C', 'D');
  ratios['B÷F1'] = ratio('B', 'F1');
  ratios['C÷F'] = ratio('C', 'F');
  ratios['C 2w÷1w'] = ratio('C2', 'C');
  if (byLabel.F1 && byLabel.D1) {
    extra.push(
      `the spec floor reaches ${ratio('F1', 'D1').toFixed(2)} of the bare proxy (F1÷D1) and ${byLabel.F && byLabel.D ? ratio('F', 'D').toFixed(2) : 'n/a'} of the bare fan-out (F÷D): the most a gateway doing what RCP/1 requires with these functions reaches against the bare ceilings`,
    );
  }
  if (byLabel.D1 && byLabel.A) {
    extra.push(
      `reference: the bare proxy D1 reaches ${(byLabel.D1.rps / byLabel.A.rps).toFixed(2)} of A (the ceiling of B÷A on this machine); B÷D1 = ${byLabel.B ? (byLabel.B.rps / byLabel.D1.rps).toFixed(2) : 'n/a'}`,
    );
  }
  if (byLabel.C && byLabel.D) {
    extra.push(
      `server CPU per request, C vs D: ${byLabel.C.cpuUsPerReq.toFixed(0)} vs ${byLabel.D.cpuUsPerReq.toFixed(0)} µs (D÷C ${(byLabel.D.cpuUsPerReq / byLabel.C.cpuUsPerReq).toFixed(2)}, the ceiling's share of the gateway's cost)`,
    );
  }
  const loadGen = results
    .filter((r) => !r.error)
    .map((r) => `${r.label.split(' ')[0]} ${r.loadCpuUsPerReq.toFixed(0)}`)
    .join(', ');
  if (loadGen) extra.push(`load generator (autocannon) CPU µs/req: ${loadGen}`);

  const rows = rowsOf(results);
  log('');
  log(printTable(rows));
  log('');
  for (const r of ratioLines(ratios)) log(`ratio ${r.name} = ${r.value} (target ${r.target}): ${r.verdict}`);
  for (const line of extra) log(`- ${line}`);
  const overrides = values.gateway !== '{}' ? `; gateway settings ${values.gateway}` : '';
  const settings = `throughput ${PLAN.seconds} s at ${PLAN.connections} connections after ${PLAN.warmup} s warm-up${PLAN.warmupSlice ? ` (${PLAN.warmupSlice} s slices on new connections)` : ''}; latency ${PLAN.latencySeconds} s at 50 % of that scenario's req/s over ${PLAN.latencyConnections} connections; k = 10, engines answer 20 hits${overrides}`;
  if (!SMOKE && !values['no-append']) {
    appendResults(values.results, { label: values.label, info, rows, ratios, extra, settings });
    log(`appended to ${path.relative(process.cwd(), values.results) || values.results}`);
  }
  const failed = results.filter((r) => r.error).length;
  if (failed > 0) process.exitCode = 1;
}

main().catch((err) => {
  process.stderr.write(`bench: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
