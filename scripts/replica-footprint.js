#!/usr/bin/env node
/**
 * What one gateway replica costs, for sizing a deployment (docs/deployment.md): for passthrough
 * (1 engine) and fan-out to 3 engines, the resident memory idle and under load, throughput,
 * server CPU per request and so requests per second per fully used core. Uses the benchmark's
 * fast engines and load generator (bench/lib); run after `npm run build`:
 *
 *   node scripts/replica-footprint.js [--seconds 10] [--connections 50] [--gateway '{"logLevel":"warn"}']
 *
 * Idle RSS is read after start and one warm-up request; loaded RSS is the peak over the run
 * (sampled every 100 ms). CPU per request is the gateway's own user + system time over the run.
 */
import { parseArgs } from 'node:util';
import { fetch } from 'undici';
import { cpuMs, rssBytes, startEngines, startGateway } from '../bench/lib/procs.js';
import { throughput } from '../bench/lib/load.js';

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '10' },
    connections: { type: 'string', default: '50' },
    gateway: { type: 'string', default: '{}' },
  },
});
const SECONDS = Number(values.seconds);
const CONNECTIONS = Number(values.connections);
const MB = 1024 * 1024;

async function measure(label, engines, engineCount) {
  const gateway = await startGateway(engines.urls.slice(0, engineCount), { gateway: JSON.parse(values.gateway) });
  try {
    const target = {
      url: `${gateway.url}/retrieve`,
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'retrieve', params: { query: 'rank fusion', k: 10 } }),
      verify: (body) => body.includes('"hits"') && !body.includes('"degraded"'),
    };
    const warm = await fetch(target.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: target.body });
    if (!warm.ok) throw new Error(`warm-up answered ${warm.status}`);
    await warm.text();
    const idle = rssBytes(gateway.pid);
    await throughput(target, { connections: CONNECTIONS, seconds: 3 }); // warm-up, discarded
    let peak = rssBytes(gateway.pid);
    const sampler = setInterval(() => {
      peak = Math.max(peak, rssBytes(gateway.pid));
    }, 100);
    const cpuBefore = cpuMs([gateway.pid]);
    const result = await throughput(target, { connections: CONNECTIONS, seconds: SECONDS });
    const cpuPerRequestUs = ((cpuMs([gateway.pid]) - cpuBefore) * 1000) / result.requests;
    clearInterval(sampler);
    return {
      label,
      rps: result.rps,
      bad: result.bad,
      cpuPerRequestUs,
      perCore: 1e6 / cpuPerRequestUs,
      idleMb: idle / MB,
      loadedMb: peak / MB,
    };
  } finally {
    await gateway.stop();
  }
}

const engines = await startEngines(3);
try {
  const rows = [await measure('passthrough (1 engine)', engines, 1), await measure('fan-out to 3 engines', engines, 3)];
  console.log(
    `Node ${process.version}, ${SECONDS} s at ${CONNECTIONS} connections, gateway settings ${values.gateway}, ${new Date().toISOString()}\n`,
  );
  console.log('| path | req/s (this run) | server CPU µs/req | req/s per core | RSS idle MB | RSS under load MB | bad answers |');
  console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: |');
  for (const r of rows) {
    console.log(
      `| ${r.label} | ${r.rps.toFixed(0)} | ${r.cpuPerRequestUs.toFixed(0)} | ${r.perCore.toFixed(0)} | ${r.idleMb.toFixed(1)} | ${r.loadedMb.toFixed(1)} | ${r.bad} |`,
    );
  }
} finally {
  await engines.stop();
}
