#!/usr/bin/env node
/**
 * Profile the gateway under a benchmark scenario: start the fast engines, run
 * `node --cpu-prof dist/cli/main.js serve …` in front of them, load it with autocannon, stop it
 * (the profile is written on exit) and print the top self-time functions.
 *
 *   node bench/profile.js [--scenario C|B|E] [--seconds 10] [--connections 50] [--out DIR]
 */
import { mkdirSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { formatSummary, summarize } from './lib/cpuprofile.js';
import { throughput } from './lib/load.js';
import { ROOT, startEngines, startGateway } from './lib/procs.js';

const { values } = parseArgs({
  options: {
    scenario: { type: 'string', default: 'C' },
    seconds: { type: 'string', default: '10' },
    connections: { type: 'string', default: '50' },
    out: { type: 'string', default: path.join(ROOT, 'bench/profiles') },
    top: { type: 'string', default: '30' },
  },
});
const scenario = values.scenario.toUpperCase();
const sse = scenario === 'E';
mkdirSync(values.out, { recursive: true });
const before = new Set(readdirSync(values.out));

const engines = await startEngines(3);
const urls = scenario === 'B' ? [engines.urls[0]] : engines.urls;
const gw = await startGateway(urls, { nodeArgs: ['--cpu-prof', '--cpu-prof-dir', values.out] });
const params = { query: 'rank fusion', k: 10, ...(sse ? { _meta: { progressToken: 'p' } } : {}) };
const target = {
  url: `${gw.url}/retrieve`,
  body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'retrieve', params }),
  headers: sse ? { accept: 'text/event-stream' } : {},
  verify: (body) => body.includes('"hits":[{') && !body.includes('"degraded"'),
};
const result = await throughput(target, { connections: Number(values.connections), seconds: Number(values.seconds) });
process.stdout.write(`scenario ${scenario}: ${result.rps.toFixed(0)} req/s under the profiler (bad answers: ${result.bad})\n`);
await gw.stop();
await engines.stop();

const written = readdirSync(values.out).filter((f) => f.endsWith('.cpuprofile') && !before.has(f));
for (const file of written) {
  const full = path.join(values.out, file);
  process.stdout.write(
    `\n${path.relative(ROOT, full)}\n${formatSummary(summarize(JSON.parse(readFileSync(full, 'utf8'))), Number(values.top))}\n`,
  );
}
if (written.length === 0) process.stdout.write('no profile was written (did the gateway exit cleanly?)\n');
