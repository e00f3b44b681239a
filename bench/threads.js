#!/usr/bin/env node
/**
 * CPU per request by thread, user and system time apart: the gateway and the bare proxy under the
 * same load, both pinned to one CPU (the load generator to the other), in alternating rounds.
 * Read from /proc/<pid>/task/<tid>/stat, so Linux only. The main thread runs the JavaScript; the
 * others are V8's workers (parallel scavenges, concurrent marking and compilation) and libuv's
 * pool (the log's asynchronous writes). Where `compare.js` says how much more CPU the gateway
 * spends, this says in which thread, and whether in the kernel (docs/performance.md, stop 36).
 *
 *   node bench/threads.js [--engines 1] [--rounds 6] [--seconds 2] [--warmup 5] [--connections 50] [--dist DIR]
 */
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { throughput } from './lib/load.js';
import { ROOT, pinToCpu, startBare, startEngines, startGateway } from './lib/procs.js';

const { values } = parseArgs({
  options: {
    engines: { type: 'string', default: '1' },
    rounds: { type: 'string', default: '6' },
    seconds: { type: 'string', default: '2' },
    warmup: { type: 'string', default: '5' },
    connections: { type: 'string', default: '50' },
    dist: { type: 'string', default: path.join(ROOT, 'dist') },
  },
});
const TICK_MS = 10; // USER_HZ is 100 on Linux
const log = (line) => process.stdout.write(`${line}\n`);

if (process.platform !== 'linux') {
  log('threads: per-thread CPU is read from /proc; not on this platform, nothing measured');
  process.exit(0);
}

/**
 * CPU ms (user, system) and context switches of each thread of `pid`: the main one, then the others
 * by start order. A thread that ends within a round is not counted for it (node's and V8's threads
 * live as long as the process).
 */
function threadTimes(pid) {
  const out = new Map();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const status = readFileSync(`/proc/${pid}/task/${tid}/status`, 'utf8');
      out.set(tid === String(pid) ? 'main' : `thread +${Number(tid) - pid}`, {
        user: Number(fields[11]) * TICK_MS,
        system: Number(fields[12]) * TICK_MS,
        switches: Number(/\nvoluntary_ctxt_switches:\s+(\d+)/.exec(status)?.[1] ?? 0),
        preempted: Number(/nonvoluntary_ctxt_switches:\s+(\d+)/.exec(status)?.[1] ?? 0),
      });
    } catch {
      // the thread ended between the listing and the read
    }
  }
  return out;
}

const pinned = pinToCpu(process.pid, 0);
const engines = await startEngines(Number(values.engines));
const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'retrieve', params: { query: 'rank fusion', k: 10 } });
const servers = [
  { name: 'gateway', proc: await startGateway(engines.urls, { cli: path.resolve(values.dist, 'cli/main.js') }) },
  { name: 'bare proxy', proc: await startBare(engines.urls) },
];
try {
  for (const server of servers) {
    server.pinned = pinned && pinToCpu(server.proc.pid, 1);
    server.target = { url: `${server.proc.url}/retrieve`, body, verify: (text) => text.includes('"hits":[{') };
    server.totals = new Map();
    server.requests = 0;
    await throughput(server.target, { connections: Number(values.connections), seconds: Number(values.warmup) });
  }
  for (let round = 0; round < Number(values.rounds); round++) {
    for (const server of servers) {
      const before = threadTimes(server.proc.pid);
      const run = await throughput(server.target, { connections: Number(values.connections), seconds: Number(values.seconds) });
      const after = threadTimes(server.proc.pid);
      server.requests += run.requests;
      for (const [thread, end] of after) {
        const start = before.get(thread) ?? { user: 0, system: 0, switches: 0, preempted: 0 };
        const sum = server.totals.get(thread) ?? { user: 0, system: 0, switches: 0, preempted: 0 };
        for (const key of Object.keys(sum)) sum[key] += end[key] - start[key];
        server.totals.set(thread, sum);
      }
    }
  }
} finally {
  for (const server of servers) await server.proc.stop();
  await engines.stop();
}

log(
  `CPU per request by thread, ${values.engines} engine(s), ${values.rounds} rounds of ${values.seconds} s${servers.every((server) => server.pinned) ? ', pinned' : ', not pinned (one CPU, or no taskset)'}`,
);
const perRequest = (server, ms) => ((ms * 1000) / server.requests).toFixed(1).padStart(7);
const sums = servers.map((server) => {
  log(`\n${server.name}: ${server.requests} requests`);
  const total = { main: 0, workers: 0, user: 0, system: 0 };
  for (const [thread, t] of server.totals) {
    if (t.user + t.system === 0 && t.switches === 0) continue;
    log(
      `  ${thread.padEnd(12)} user ${perRequest(server, t.user)} µs  system ${perRequest(server, t.system)} µs  ` +
        `switches ${(t.switches / server.requests).toFixed(3)}/req  preempted ${(t.preempted / server.requests).toFixed(3)}/req`,
    );
    total.user += t.user;
    total.system += t.system;
    if (thread === 'main') total.main += t.user + t.system;
    else total.workers += t.user + t.system;
  }
  log(`  all threads  user ${perRequest(server, total.user)} µs  system ${perRequest(server, total.system)} µs`);
  return { server, total };
});
const [gateway, bare] = sums;
const ratio = (key) => (gateway.total[key] / gateway.server.requests / (bare.total[key] / bare.server.requests)).toFixed(2);
log(
  `\ngateway ÷ bare proxy, per request: main thread ${ratio('main')}, other threads ${ratio('workers')}, user ${ratio('user')}, system ${ratio('system')}`,
);
