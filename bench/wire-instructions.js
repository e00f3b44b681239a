#!/usr/bin/env node
/**
 * Instructions per request of whole server processes on the wire, counted under valgrind: the
 * gateway as `serve` runs it (dist/cli/main.js, real engine processes over loopback, HTTP load
 * from this process), the bare proxy or the spec floor. Where bench/instructions.js prices the
 * gateway's own code in memory, this prices everything the process does for a request: node's
 * HTTP server, undici, JSON, the garbage collector and the gateway, so its ratio to the bare
 * proxy is the CPU target's ratio without the kernel and without the host's speed in it.
 *
 *   node bench/wire-instructions.js [--engines 1] [--dist DIR] [--against bare|floor|DIR]
 *        [--warmup 6000] [--requests 1000] [--connections 8] [--gateway JSON]
 *   node bench/wire-instructions.js --profile [--cache] [--engines 1] [--dist DIR|bare|floor] [--top 40]
 *   node bench/wire-instructions.js --cache [--engines 1] [--against bare]
 *
 * Count (default): each server runs twice after the same warm-up, once with `--requests` more
 * requests and once with twice as many; the difference over `--requests` is a settled request's
 * cost (start-up, warm-up and exit cancel out). The servers run one after the other, and the load
 * keeps the same connections from warm-up to the end (new ones re-tier node's code and put
 * compilation in the count). The gateway's count depends on timing more than the bare proxy's:
 * slowed enough (two servers under valgrind at once), legs reach their timers and are retried,
 * and a pair run side by side once gave 1.84 × the bare proxy where the same build's profile
 * (below) gave 1.36.
 * After a short warm-up the gateway is still compiling, and a difference of two counts can come
 * out anywhere, even negative. The profile is the steadier figure.
 *
 * Cache (`--cache`): the count mode with valgrind's cache simulation on, so each server's
 * first-level instruction and data misses and last-level misses per request come with its
 * instructions (the same 2N − N difference). A simulation of the host's caches for one thread at a
 * time, not the hardware's counters (this VM has none): it says whether a server's excess time per
 * instruction is code (instruction misses) or data. About twice as slow as a count.
 *
 * Profile (`--profile`): one server under callgrind, counters zeroed after the warm-up and dumped
 * after `--requests`; instructions per request by origin (JSON, the garbage collector, V8's
 * runtime and inline caches, node, undici, the gateway's files) and by function, JIT code named
 * from V8's perf map (`--perf-basic-prof`).
 *
 * Profile with `--cache`: the same, with callgrind's cache simulation on, so the misses are placed
 * too: per request by origin (instructions, first-level instruction and data misses, last-level
 * misses, and a rough cycle estimate from them), and the functions with the most instruction-cache
 * misses. What `--cache` says in sum, this says by place. For the steady state warm up with
 * `--warmup 15000`: after the default 6,000 the gateway is still compiling (its optimising
 * compiler 60k instructions per measured request, against 4k after 15,000; docs/performance.md).
 *
 * Needs valgrind; prints why and exits 0 without it. Slow (valgrind runs node ~40× slower): a
 * count pair takes two to four minutes at the defaults, a profile about as long.
 */
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { Pool } from 'undici';
import { COUNTING_NODE_FLAGS, cachegrindCounter, hasValgrind } from './lib/valgrind.js';
import { ROOT, startEngines } from './lib/procs.js';
import { summarizeCallgrind } from './lib/callgrind.js';

const { values } = parseArgs({
  options: {
    engines: { type: 'string', default: '1' },
    dist: { type: 'string', default: path.join(ROOT, 'dist') },
    against: { type: 'string' },
    warmup: { type: 'string', default: '6000' },
    requests: { type: 'string', default: '1000' },
    connections: { type: 'string', default: '8' },
    gateway: { type: 'string', default: '{}' },
    profile: { type: 'boolean', default: false },
    cache: { type: 'boolean', default: false },
    top: { type: 'string', default: '40' },
    'node-flags': {
      type: 'string',
      default: COUNTING_NODE_FLAGS,
    },
  },
});

if (!hasValgrind()) {
  process.stdout.write('wire instructions: valgrind is not installed here (apt-get install valgrind); nothing counted\n');
  process.exit(0);
}

const engines = await startEngines(Number(values.engines));
const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'retrieve', params: { query: 'rank fusion', k: 10 } });

/** The server's command line: the bare proxy, the spec floor, or a gateway build's CLI. */
function serverArgs(server, dir) {
  if (server === 'bare' || server === 'floor') {
    return [path.join(ROOT, `bench/lib/${server === 'bare' ? 'bare' : 'spec-floor'}.js`), '--engines', engines.urls.join(',')];
  }
  const config = path.join(dir, 'gateway.json');
  const entries = engines.urls.map((url, i) => ({ id: `e${i}`, transport: 'http', url }));
  writeFileSync(config, JSON.stringify({ engines: entries, gateway: JSON.parse(values.gateway) }));
  return [path.resolve(server, 'cli/main.js'), 'serve', '--config', config, '--port', '0'];
}

/** Start `server` under a valgrind tool; resolves with its child process and RCP base URL. */
function startUnder(tool, server, dir, extraNodeFlags = []) {
  const child = spawn(
    'valgrind',
    [...tool, process.execPath, ...values['node-flags'].split(' ').filter(Boolean), ...extraNodeFlags, ...serverArgs(server, dir)],
    { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const output = { err: '' };
  let out = '';
  child.stderr.setEncoding('utf8');
  child.stdout.setEncoding('utf8');
  const url = new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`${server} exited (${code}) under valgrind:\n${output.err.slice(-3000)}`)));
    // The gateway prints `listening on <url>` on stderr; the bench servers `{"listening":"<url>"}` on stdout.
    child.stderr.on('data', (chunk) => {
      output.err = (output.err + chunk).slice(-20_000);
      const match = /listening on (http:\/\/\S+)\s/.exec(output.err); // whole: a chunk may end mid-URL
      if (match) resolve(match[1]);
    });
    child.stdout.on('data', (chunk) => {
      out += chunk;
      const match = /"listening":"(http:\/\/[^"]+)"/.exec(out);
      if (match) resolve(match[1]);
    });
  });
  return { child, url, output };
}

/** `count` retrieve requests, `--connections` at a time, over `pool` (kept by the caller). */
async function drive(pool, base, count) {
  let left = count;
  let wrong = 0;
  await Promise.all(
    Array.from({ length: Number(values.connections) }, async () => {
      while (left-- > 0) {
        const answer = await pool.request({
          path: `${base}/retrieve`,
          method: 'POST',
          body,
          headers: { 'content-type': 'application/json' },
        });
        if (!(await answer.body.text()).includes('"hits":[{')) wrong++;
      }
    }),
  );
  if (wrong > 0) throw new Error(`${wrong} answers without hits`);
}

async function loaded(url, phases) {
  const { origin, pathname } = new URL(url);
  // One pool for the whole run: the same connections from warm-up to the end.
  const pool = new Pool(origin, { connections: Number(values.connections) });
  try {
    for (const phase of phases) await phase((count) => drive(pool, pathname.replace(/\/$/, ''), count));
  } finally {
    await pool.close();
  }
}

function stop(child) {
  // 'close', not 'exit': valgrind's summary (the last line --cache reads) may still be in the pipe at 'exit'.
  const exited = new Promise((resolve) => child.once('close', resolve));
  child.kill('SIGTERM');
  return exited;
}

/** The counters read from cachegrind's summary (lib/valgrind.js): `I refs`, and with `--cache` the misses. */
const COUNTERS = values.cache ? ['I refs', 'I1 misses', 'D refs', 'D1 misses', 'LL misses'] : ['I refs'];

/** Valgrind's counters for `server` with `measured` requests after the warm-up. */
async function countRun(server, measured) {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'rcp-wire-'));
  try {
    const { child, url, output } = startUnder(
      ['--tool=cachegrind', `--cache-sim=${values.cache ? 'yes' : 'no'}`, `--cachegrind-out-file=${path.join(dir, 'out')}`],
      server,
      dir,
    );
    await loaded(await url, [(drive) => drive(Number(values.warmup)), (drive) => drive(measured)]);
    child.removeAllListeners('exit');
    await stop(child);
    return COUNTERS.map((name) => {
      const count = cachegrindCounter(output.err, name);
      if (count === undefined) throw new Error(`no "${name}" from valgrind:\n${output.err.slice(-3000)}`);
      return count;
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Each counter per settled request: (run with 2N − run with N) ÷ N. */
async function perRequest(server) {
  const n = Number(values.requests);
  const once = await countRun(server, n);
  const twice = await countRun(server, 2 * n);
  return twice.map((count, i) => (count - once[i]) / n);
}

/**
 * With `--profile --cache`: the simulated misses per request by origin, and the functions with
 * the most instruction-cache misses. `est. cycles` weighs them as cachegrind's documentation
 * suggests for a rough figure: an instruction 1, a first-level miss 10, a last-level miss 100.
 */
function writeMisses(events) {
  const sum = (names, origin) =>
    names.reduce((total, event) => total + (events.get(event)?.origins.find(([name]) => name === origin)?.[1] ?? 0), 0);
  const FIRST = ['I1mr', 'D1mr', 'D1mw'];
  const LAST = ['ILmr', 'DLmr', 'DLmw'];
  const origins = [...new Set([...events.values()].flatMap(({ origins: list }) => list.map(([name]) => name)))];
  const rows = origins
    .map((origin) => {
      const ir = sum(['Ir'], origin);
      const i1 = sum(['I1mr'], origin);
      const d1 = sum(['D1mr', 'D1mw'], origin);
      const ll = sum(LAST, origin);
      return { origin, ir, i1, d1, ll, cycles: ir + 10 * sum(FIRST, origin) + 100 * ll };
    })
    .sort((a, b) => b.cycles - a.cycles);
  const n = (value) => value.toFixed(0).padStart(8);
  const total = rows.reduce(
    (acc, row) => ({ ir: acc.ir + row.ir, i1: acc.i1 + row.i1, d1: acc.d1 + row.d1, ll: acc.ll + row.ll, cycles: acc.cycles + row.cycles }),
    {
      ir: 0,
      i1: 0,
      d1: 0,
      ll: 0,
      cycles: 0,
    },
  );
  process.stdout.write('simulated cache, per request (est. cycles = Ir + 10 × first-level misses + 100 × last-level misses):\n');
  process.stdout.write(
    `${'Ir'.padStart(8)} ${'I1 miss'.padStart(8)} ${'D1 miss'.padStart(8)} ${'LL miss'.padStart(8)} ${'cycles'.padStart(8)}  origin\n`,
  );
  for (const row of [...rows.slice(0, 25), { origin: 'total', ...total }]) {
    process.stdout.write(`${n(row.ir)} ${n(row.i1)} ${n(row.d1)} ${n(row.ll)} ${n(row.cycles)}  ${row.origin}\n`);
  }
  process.stdout.write('by function, instruction-cache misses:\n');
  for (const [name, misses] of (events.get('I1mr')?.functions ?? []).slice(0, Number(values.top))) {
    process.stdout.write(`${misses.toFixed(1).padStart(8)}  ${name.slice(0, 150)}\n`);
  }
}

const nameOf = (server) =>
  server === 'bare' || server === 'floor' ? server : path.relative(process.cwd(), path.resolve(server)) || server;

try {
  if (values.profile) {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'rcp-wire-profile-'));
    try {
      const out = path.join(dir, 'callgrind.out');
      const tool = ['--tool=callgrind', '--dump-instr=yes', `--callgrind-out-file=${out}`];
      if (values.cache) tool.push('--cache-sim=yes');
      const { child, url } = startUnder(tool, values.dist, dir, ['--perf-basic-prof']);
      await loaded(await url, [
        (drive) => drive(Number(values.warmup)),
        async (drive) => {
          execFileSync('callgrind_control', ['-z', String(child.pid)], { stdio: 'ignore' });
          await drive(Number(values.requests));
          execFileSync('callgrind_control', ['-d', String(child.pid)], { stdio: 'ignore' });
        },
      ]);
      child.removeAllListeners('exit');
      await stop(child);
      const perfMap = `/tmp/perf-${child.pid}.map`;
      const summary = summarizeCallgrind(readFileSync(`${out}.1`, 'utf8'), readFileSync(perfMap, 'utf8'), Number(values.requests));
      rmSync(perfMap, { force: true });
      const k = (n) => `${(n / 1000).toFixed(1).padStart(8)}k`;
      process.stdout.write(
        `wire instruction profile (${values.engines} engine(s), ${values.requests} requests after ${values.warmup}) ${nameOf(values.dist)}: ${k(summary.total)} per request\n`,
      );
      process.stdout.write('by origin:\n');
      for (const [name, n] of summary.origins.slice(0, 25)) process.stdout.write(`${k(n)}  ${name}\n`);
      process.stdout.write('by function:\n');
      for (const [name, n] of summary.functions.slice(0, Number(values.top))) process.stdout.write(`${k(n)}  ${name.slice(0, 150)}\n`);
      if (values.cache) writeMisses(summary.events);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  } else {
    const servers = [values.dist, ...(values.against ? [values.against] : [])];
    const label = `${values.engines} engine(s), ${values.requests} requests after ${values.warmup}`;
    // One server at a time: two under valgrind at once, beside the engines and the load, slow the
    // gateway enough for its per-call timers to matter (a leg timed out and retried is more work).
    const counts = [];
    for (const server of servers) counts.push(await perRequest(server));
    const perReq = (n) => Math.round(n).toLocaleString('en');
    servers.forEach((server, i) => {
      const [instructions, ...misses] = counts[i];
      const detail =
        misses.length > 0
          ? ` (${COUNTERS.slice(1)
              .map((name, j) => `${name} ${perReq(misses[j])}`)
              .join(', ')})`
          : '';
      process.stdout.write(`wire instructions (${label}) ${nameOf(server)}: ${perReq(instructions)} per request${detail}\n`);
    });
    if (counts.length === 2) {
      const ratios = COUNTERS.map((name, j) => `${j === 0 ? '' : `${name} `}${(counts[0][j] / counts[1][j]).toFixed(4)}`);
      process.stdout.write(`ratio ${nameOf(servers[0])} ÷ ${nameOf(servers[1])}: ${ratios.join(', ')}\n`);
    }
  }
} finally {
  await engines.stop();
}
