#!/usr/bin/env node
/**
 * Instructions per request of the gateway's own code, counted rather than timed: the in-memory
 * gateway of bench/core-cost.js (a real Gateway and Session from dist/, engines answering from
 * memory) run under valgrind's instruction counter (cachegrind, no cache simulation). The host's
 * speed does not enter the count, so a change of 1–2 % that time-based figures on this shared VM
 * cannot resolve (docs/performance.md, "Instruments") shows as a plain difference.
 *
 *   node bench/instructions.js [--engines 1] [--observed] [--dist DIR] [--against DIR]
 *        [--warmup 2000] [--requests 1000] [--concurrency 32]
 *
 * Each build runs twice, after the same warm-up: once with `--requests` more requests and once
 * with twice as many; the difference of the two counts divided by `--requests` is the cost of a
 * request in the settled process (start-up, warm-up and exit cancel out). The runs of two builds
 * go side by side (one per core). A count is not a time: cache misses, which weigh on memory-bound
 * code such as fusion, are not in it. It prices code, not memory.
 *
 * Needs valgrind (`apt-get install valgrind`); prints why and exits 0 without it. Slow: valgrind
 * runs node ~40× slower, so a build takes a few minutes at the defaults.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import { buildMemoryGateway } from './lib/memory-gateway.js';
import { COUNTING_NODE_FLAGS, cachegrindCounter, hasValgrind } from './lib/valgrind.js';
import { ROOT } from './lib/procs.js';

const { values } = parseArgs({
  options: {
    engines: { type: 'string', default: '1' },
    dist: { type: 'string', default: path.join(ROOT, 'dist') },
    against: { type: 'string' },
    observed: { type: 'boolean', default: false },
    warmup: { type: 'string', default: '2000' },
    requests: { type: 'string', default: '3000' },
    concurrency: { type: 'string', default: '32' },
    'node-flags': {
      type: 'string',
      default: COUNTING_NODE_FLAGS,
    },
    // Internal: run the workload itself (under valgrind) and exit.
    child: { type: 'string' },
  },
});

if (values.child !== undefined) {
  await runWorkload(Number(values.child));
  process.exit(0);
}

/** The workload valgrind counts: warm-up, then `measured` requests, `--concurrency` at a time. */
async function runWorkload(measured) {
  const subject = await buildMemoryGateway({
    dist: values.dist,
    engines: Number(values.engines),
    hits: 20,
    delayMs: 0,
    observed: values.observed,
    logLevel: 'info',
  });
  // Each request waits for the next turn of the event loop before the next one starts, as requests
  // arriving on sockets would: the turn's work (the request lines' write) is done per turn, not
  // once for the whole run, and nothing depends on how fast the host runs.
  const nextTurn = () => new Promise((resolve) => setImmediate(resolve));
  const drive = async (count) => {
    let left = count;
    await Promise.all(
      Array.from({ length: Number(values.concurrency) }, async () => {
        while (left > 0) {
          left--;
          await subject.one();
          await nextTurn();
        }
      }),
    );
  };
  const collect = globalThis.gc ?? (() => undefined);
  await drive(Number(values.warmup));
  // Both runs of a build enter the measured requests, and leave them, with the heap collected.
  collect();
  await drive(measured);
  collect();
}

if (!hasValgrind()) {
  process.stdout.write('instructions: valgrind is not installed here (apt-get install valgrind); nothing counted\n');
  process.exit(0);
}

/** Instructions valgrind counted for one run of the workload with `measured` requests after the warm-up. */
function countRun(dist, measured) {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'rcp-instr-'));
  const args = [
    '--tool=cachegrind',
    '--cache-sim=no',
    `--cachegrind-out-file=${path.join(dir, 'out')}`,
    process.execPath,
    ...values['node-flags'].split(' ').filter(Boolean),
    fileURLToPath(import.meta.url),
    '--child',
    String(measured),
    '--dist',
    dist,
    '--engines',
    values.engines,
    '--warmup',
    values.warmup,
    '--concurrency',
    values.concurrency,
    ...(values.observed ? ['--observed'] : []),
  ];
  return new Promise((resolve, reject) => {
    const child = spawn('valgrind', args, { stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk) => (err = (err + chunk).slice(-20_000)));
    // 'close', not 'exit': the summary may still be in the pipe at 'exit'.
    child.on('close', (code) => {
      rmSync(dir, { recursive: true, force: true });
      const refs = cachegrindCounter(err, 'I refs');
      if (code !== 0 || refs === undefined) reject(new Error(`valgrind run failed (${code}):\n${err.slice(-3000)}`));
      else resolve(refs);
    });
  });
}

/** Instructions per settled request of `dist`: (count with 2N − count with N) / N. */
async function perRequest(dist) {
  const n = Number(values.requests);
  const [once, twice] = [await countRun(dist, n), await countRun(dist, 2 * n)];
  return (twice - once) / n;
}

const builds = [values.dist, ...(values.against ? [values.against] : [])];
const label = `${values.engines} engine(s)${values.observed ? ', observed' : ''}, ${values.requests} requests after ${values.warmup}`;
const names = builds.map((dist) => path.relative(process.cwd(), path.resolve(dist)) || dist);
const counts = await Promise.all(builds.map((dist) => perRequest(dist)));
names.forEach((name, i) => {
  process.stdout.write(`instructions (${label}) ${name}: ${Math.round(counts[i]).toLocaleString('en')} per request\n`);
});
if (counts.length === 2) process.stdout.write(`ratio ${names[0]} ÷ ${names[1]}: ${(counts[0] / counts[1]).toFixed(4)}\n`);
