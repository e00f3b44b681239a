#!/usr/bin/env node
/**
 * Where the memory a request allocates goes: the gateway and the bare proxy under the same load,
 * each with V8's sampling heap profiler on for a few seconds (bench/lib/heap-sampler.js, objects
 * already collected counted too), then bytes per request by allocating function, largest first.
 * Allocation drives how often the young generation is scavenged, the gateway's largest excess
 * over the bare proxy with three engines (docs/performance.md, "CPU diet").
 *
 *   node bench/allocation.js [--engines 1|3] [--seconds 5] [--warmup 6] [--connections 32] [--top 25]
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import { throughput } from './lib/load.js';
import { ROOT, startBare, startEngines, startGateway } from './lib/procs.js';

const { values } = parseArgs({
  options: {
    engines: { type: 'string', default: '1' },
    seconds: { type: 'string', default: '5' },
    warmup: { type: 'string', default: '6' },
    connections: { type: 'string', default: '32' },
    top: { type: 'string', default: '25' },
  },
});
const engineCount = Number(values.engines);
const seconds = Number(values.seconds);
const dir = mkdtempSync(path.join(os.tmpdir(), 'rcp-alloc-'));
process.env.RCPGW_BENCH_HEAPDIR = dir;
const nodeArgs = ['--import', path.join(ROOT, 'bench/lib/heap-sampler.js')];

const engines = await startEngines(engineCount);
const servers = [
  ['gateway', await startGateway(engines.urls, { nodeArgs })],
  ['bare proxy', await startBare(engines.urls, { nodeArgs })],
];
const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'retrieve', params: { query: 'rank fusion', k: 10 } });

/** Bytes per request by `function file:line`, from a sampling heap profile's tree. */
function perFunction(profile, requests) {
  const bytes = new Map();
  let total = 0;
  const walk = (node) => {
    const { functionName, url, lineNumber } = node.callFrame;
    const where = url ? `${url.replace(/^.*\/(node_modules|dist|bench)\//, '$1/')}:${lineNumber + 1}` : '(native)';
    const key = `${functionName || '(anonymous)'} ${where}`;
    bytes.set(key, (bytes.get(key) ?? 0) + node.selfSize);
    total += node.selfSize;
    for (const child of node.children) walk(child);
  };
  walk(profile.head);
  return { total: total / requests, rows: [...bytes].map(([key, b]) => [key, b / requests]).sort((a, b) => b[1] - a[1]) };
}

try {
  for (const [name, server] of servers) {
    const target = { url: `${server.url}/retrieve`, body, headers: {}, verify: (text) => text.includes('"hits":[{') };
    await throughput(target, { connections: Number(values.connections), seconds: Number(values.warmup) }); // the steady state first
    process.kill(server.pid, 'SIGUSR2');
    await sleep(200);
    const run = await throughput(target, { connections: Number(values.connections), seconds });
    process.kill(server.pid, 'SIGUSR2');
    const file = path.join(dir, `${server.pid}.heapprofile`);
    for (let waited = 0; waited < 10_000; waited += 100) {
      try {
        readFileSync(file);
        break;
      } catch {
        await sleep(100);
      }
    }
    const { total, rows } = perFunction(JSON.parse(readFileSync(file, 'utf8')), run.rps * seconds);
    process.stdout.write(
      `\n${name}, ${engineCount} engine(s): ${run.rps.toFixed(0)} req/s, ${(total / 1024).toFixed(1)} KB allocated per request\n`,
    );
    for (const [key, b] of rows.slice(0, Number(values.top))) process.stdout.write(`${b.toFixed(0).padStart(8)} B  ${key}\n`);
  }
} finally {
  for (const [, server] of servers) await server.stop();
  await engines.stop();
  rmSync(dir, { recursive: true, force: true });
}
