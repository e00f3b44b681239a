#!/usr/bin/env node
/**
 * CPU per request of the gateway's own code, without sockets: a real Gateway and Session from
 * dist/ over engines that answer from memory (each answer parsed from its JSON text, each
 * request serialised, as a wire transport would), driven at a fixed concurrency. What is left
 * when the kernel, the HTTP parser and the load generator are taken away: the part of the
 * per-request cost the CPU diet works on (bench/RESULTS.md, "CPU diet").
 *
 *   node bench/core-cost.js [--engines 1] [--seconds 6] [--concurrency 32] [--hits 20]
 *        [--delay-ms 0] [--dist DIR] [--against DIR] [--observed [--log-level info]] [--observed-pair]
 *        [--meta JSON]
 *
 * --delay-ms makes each engine answer after a timer, so requests interleave as they do under
 * real load. --against loads a second build into the same process and alternates between the
 * two in short slices (paired figures: a drift in machine speed hits both alike). --observed
 * wraps the gateway as `serve` does (node/operations.ts: metrics, the info request line, here
 * written to /dev/null), so the observation layer is priced too; --observed-pair runs the build
 * both ways in one process. --meta sends that `_meta` with every request (parsed afresh for each,
 * as a client's would be), e.g. `--meta '{"traceId":"client-7"}'`.
 */
import path from 'node:path';
import { parseArgs } from 'node:util';
import { buildMemoryGateway } from './lib/memory-gateway.js';
import { ROOT } from './lib/procs.js';

const { values } = parseArgs({
  options: {
    engines: { type: 'string', default: '1' },
    seconds: { type: 'string', default: '6' },
    concurrency: { type: 'string', default: '32' },
    hits: { type: 'string', default: '20' },
    'delay-ms': { type: 'string', default: '0' },
    dist: { type: 'string', default: path.join(ROOT, 'dist') },
    against: { type: 'string' },
    observed: { type: 'boolean', default: false },
    'observed-pair': { type: 'boolean', default: false },
    'log-level': { type: 'string', default: 'info' },
    meta: { type: 'string' },
  },
});
const HITS = Number(values.hits);
const DELAY_MS = Number(values['delay-ms']);

async function build(dist, observed = values.observed) {
  const subject = await buildMemoryGateway({
    dist,
    engines: Number(values.engines),
    hits: HITS,
    delayMs: DELAY_MS,
    observed,
    logLevel: values['log-level'],
    meta: values.meta,
  });
  return { ...subject, cpu: 0, done: 0 };
}

async function drive(subject, ms) {
  const until = performance.now() + ms;
  let done = 0;
  const cpu0 = process.cpuUsage();
  await Promise.all(
    Array.from({ length: Number(values.concurrency) }, async () => {
      while (performance.now() < until) {
        await subject.one();
        done++;
      }
    }),
  );
  const cpu = process.cpuUsage(cpu0);
  return { done, cpuUs: cpu.user + cpu.system };
}

const subjects = [await build(values.dist)];
if (values.against) subjects.push(await build(values.against));
else if (values['observed-pair']) subjects.push(await build(values.dist, !values.observed));
for (const s of subjects) await drive(s, 1_000); // warm-up
const slices = Math.max(1, Math.round((Number(values.seconds) * 1000) / 500));
for (let i = 0; i < slices; i++) {
  for (const s of i % 2 === 0 ? subjects : [...subjects].reverse()) {
    const r = await drive(s, 500 / subjects.length);
    s.cpu += r.cpuUs;
    s.done += r.done;
  }
}
const label = `${values.engines} engine(s), ${HITS} hits each, ${values.concurrency} concurrent${DELAY_MS > 0 ? `, engines answer after ${DELAY_MS} ms` : ''}`;
for (const s of subjects) {
  process.stdout.write(`core cost (${label}) ${s.name}: ${(s.cpu / s.done).toFixed(1)} µs CPU per request (${s.done} requests)\n`);
}
if (subjects.length === 2)
  process.stdout.write(
    `ratio ${subjects[0].name} ÷ ${subjects[1].name}: ${(subjects[0].cpu / subjects[0].done / (subjects[1].cpu / subjects[1].done)).toFixed(3)}\n`,
  );
for (const s of subjects) await s.gateway.stop();
