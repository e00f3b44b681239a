#!/usr/bin/env node
/**
 * Side-by-side comparison of gateway builds (or settings) and the bare ceiling: every variant is
 * started once, then loaded in turn for a short slice, round after round, so each variant's
 * figure is taken right beside the others' and a drift in machine speed (a shared host) hits
 * them alike. Per round each variant's CPU per request is divided by the bare ceiling's from the
 * same round; the medians of those ratios are what the CPU diet is judged on
 * (bench/RESULTS.md, "CPU diet"). With several gateway variants, each after the first is also
 * compared with the first round by round: the median of its per-round CPU ratios, in how many
 * rounds it was lower, and the sign test's p (bench/lib/paired.js), so a few-percent change is
 * judged with a number on a host whose speed drifts.
 *
 *   node bench/compare.js [--engines 1|3] [--rounds 8 (rounded up to whole turns of the order)] [--seconds 2] [--connections 50] [--pin]
 *        [--variant 'NAME=CLI_PATH[@GATEWAY_JSON][ NODE_FLAG…]']... [--no-spec] [--floor-variant 'NAME=STEP[,STEP…][ ARG…]']...
 *        [--bare-variant 'NAME=NODE_FLAG[ NODE_FLAG…]']... [--warmup 20] [--instances 1]
 *
 * Beside the variants and the bare ceiling runs the spec floor (bench/lib/spec-floor.js: the bare
 * ceiling plus only the work RCP/1 requires of a gateway), so the gateway's excess over the bare
 * ceiling splits into what the spec costs and what this gateway adds; --no-spec leaves it out.
 * --floor-variant adds a spec floor with steps left out (spec-floor.js --skip), pricing each;
 * words after the steps go to spec-floor.js as they are (e.g. `NAME= --cut signal` prices the
 * floor's deadline done with an AbortController per request instead of a cuttable leg).
 *
 * --bare-variant adds the bare ceiling run with node flags of its own (e.g. `--max-semi-space-size=64`),
 * so a runtime setting tried on the gateway is priced on the ceiling too; the ratios stay against
 * the plain bare ceiling. Each row also gives the load generator's own CPU per request (this
 * process: autocannon and the response checks).
 *
 * --instances N starts N processes of every variant (the bare ceiling too), each in the turning
 * order: a variant's figure per round is then its instances' mean, and each instance's own ratio is
 * printed, since one process of a build can differ from another of the same build by several
 * percent for its whole life (A/A runs, docs/performance.md, stop 39).
 *
 * --pin puts the processes under test on CPU 1 and the load generator and engines on CPU 0.
 * Without --variant it compares dist/cli/main.js with the bare ceiling.
 */
import path from 'node:path';
import { parseArgs } from 'node:util';
import { describePaired, median, pairedRatio } from './lib/paired.js';
import { throughput } from './lib/load.js';
import { cpuMs, pinToCpu, processTree, ROOT, startBare, startEngines, startGateway, startSpecFloor } from './lib/procs.js';

const { values } = parseArgs({
  options: {
    engines: { type: 'string', default: '1' },
    rounds: { type: 'string', default: '8' },
    seconds: { type: 'string', default: '2' },
    connections: { type: 'string', default: '50' },
    variant: { type: 'string', multiple: true, default: [] },
    pin: { type: 'boolean', default: false },
    spec: { type: 'boolean', default: true },
    'floor-variant': { type: 'string', multiple: true, default: [] },
    'bare-variant': { type: 'string', multiple: true, default: [] },
    // Seconds of load before the first round, in round-sized slices. The gateway's JIT settles in
    // ~10 s on the same connections but ~20 s when they are renewed (each round's load opens new
    // ones, and a reconnect deoptimises code bound to the old connections' maps; docs/performance.md,
    // stops 37–38); the bare proxy in ~1 s.
    warmup: { type: 'string', default: '20' },
    // Processes per variant. One process of a build can sit a few percent above or below another of
    // the same build for its whole life (A/A runs, stop 39), which rounds of the same processes do
    // not average out; several instances per variant, each in the turning order, do.
    instances: { type: 'string', default: '1' },
  },
  allowNegative: true, // --no-spec
});
const log = (line) => process.stdout.write(`${line}\n`);
const mean = (values) => values.reduce((a, b) => a + b, 0) / values.length;
if (!(Number(values.seconds) > 0) || !(Number(values.warmup) >= 0)) {
  process.stderr.write('compare.js: --seconds must be a positive number and --warmup a non-negative one\n');
  process.exit(2);
}
const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'retrieve', params: { query: 'rank fusion', k: 10 } });
const verify = (text) => text.includes('"hits":[{') && !text.includes('"degraded"') && !text.includes('"error"');
const variants = (values.variant.length > 0 ? values.variant : [`gateway=${path.join(ROOT, 'dist/cli/main.js')}`]).map((spec) => {
  const eq = spec.indexOf('=');
  const [target, ...nodeArgs] = spec.slice(eq + 1).split(' ');
  const at = target.indexOf('@');
  const [cli, json] = at < 0 ? [target, undefined] : [target.slice(0, at), target.slice(at + 1)];
  return { name: spec.slice(0, eq), cli: path.resolve(cli), gateway: json ? JSON.parse(json) : {}, nodeArgs: nodeArgs.filter(Boolean) };
});
for (const spec of values['floor-variant']) {
  const eq = spec.indexOf('=');
  const [steps = '', ...args] = spec.slice(eq + 1).split(' ');
  variants.push({ name: spec.slice(0, eq), floor: true, skip: steps.split(',').filter(Boolean), args: args.filter(Boolean) });
}
if (values.spec) variants.push({ name: 'spec floor', floor: true, skip: [] });
for (const spec of values['bare-variant']) {
  const eq = spec.indexOf('=');
  variants.push({
    name: spec.slice(0, eq),
    bare: true,
    nodeArgs: spec
      .slice(eq + 1)
      .split(' ')
      .filter(Boolean),
  });
}
variants.push({ name: 'bare', bare: true });
const INSTANCES = Number(values.instances);
if (!Number.isInteger(INSTANCES) || INSTANCES < 1) {
  process.stderr.write('compare.js: --instances must be a positive whole number\n');
  process.exit(2);
}
if (INSTANCES > 1) {
  const copies = variants.flatMap((v) =>
    Array.from({ length: INSTANCES }, (_, i) => ({ ...v, name: `${v.name}#${i + 1}`, family: v.name })),
  );
  variants.splice(0, variants.length, ...copies);
}
let pinning = values.pin;
const pin = (pids, cpu) => {
  if (!pinning) return;
  if (pids.every((pid) => pinToCpu(pid, cpu))) return;
  pinning = false; // no taskset, or one CPU: measured unpinned, and said so
  log('not pinning (one CPU, or no taskset)');
};

pin([process.pid], 0);
const engines = await startEngines(3);
const urls = engines.urls.slice(0, Number(values.engines));
try {
  for (const v of variants) {
    v.proc = v.bare
      ? await startBare(urls, { nodeArgs: v.nodeArgs })
      : v.floor
        ? await startSpecFloor(urls, { skip: v.skip, args: v.args })
        : await startGateway(urls, { cli: v.cli, gateway: v.gateway, nodeArgs: v.nodeArgs });
    v.pids = () => (v.bare || v.floor ? [v.proc.pid] : processTree(v.proc.pid));
    pin(v.pids(), 1);
    v.target = { url: `${v.proc.url}/retrieve`, body, verify };
    v.runs = [];
  }
  // Discarded; sliced as the rounds are, so the reconnects' recompilation is behind us too, and
  // interleaved as the rounds are: warmed one after the other, the first variant sat idle for the
  // others' whole warm-up and measured its first round cold (320 µs against ~165, stop 39).
  for (let left = Number(values.warmup); left > 0; left -= Number(values.seconds)) {
    for (const v of variants) {
      await throughput(v.target, { connections: Number(values.connections), seconds: Math.min(left, Number(values.seconds)) });
    }
  }
  // The order turns by one place each round, so every variant (the bare ceiling too) is loaded
  // first, second, … equally often: in a fixed order the first place measured ~10 % more CPU per
  // request than the others with the very same build (A/A/A run, docs/performance.md, stop 39).
  // The rounds are rounded up to whole turns, so no place is held more often than another.
  const rounds = Math.ceil(Number(values.rounds) / variants.length) * variants.length;
  for (let round = 0; round < rounds; round++) {
    for (let i = 0; i < variants.length; i++) {
      const v = variants[(i + round) % variants.length];
      const before = cpuMs(v.pids());
      const genBefore = process.cpuUsage();
      const t = await throughput(v.target, { connections: Number(values.connections), seconds: Number(values.seconds) });
      const gen = process.cpuUsage(genBefore);
      v.runs.push({
        rps: t.rps,
        cpu: ((cpuMs(v.pids()) - before) * 1000) / t.requests,
        gen: (gen.user + gen.system) / t.requests,
        bad: t.bad,
      });
    }
    // The plain bare ceiling's figure this round (its instances' mean).
    const bareCpu = mean(variants.filter((v) => v.bare && !v.nodeArgs).map((v) => v.runs[round].cpu));
    log(
      `round ${round + 1}: ${variants.map((v) => `${v.name} ${v.runs[round].cpu.toFixed(0)} µs (${(v.runs[round].cpu / bareCpu).toFixed(2)})`).join(', ')}`,
    );
  }
} finally {
  for (const v of variants) await v.proc?.stop();
  await engines.stop();
}
log('');
/**
 * With several instances per variant, each variant's figure per round is the mean of its
 * instances' in that round, and what follows is judged on those; each instance's own median
 * ratio to the bare ceiling is printed first, so the spread between processes is in view.
 */
function familiesOf(all) {
  if (INSTANCES === 1) return all;
  const byName = new Map();
  for (const v of all) byName.set(v.family, [...(byName.get(v.family) ?? []), v]);
  return [...byName.values()].map((members) => ({
    ...members[0],
    name: members[0].family,
    members,
    runs: members[0].runs.map((_, round) => ({
      rps: mean(members.map((m) => m.runs[round].rps)),
      cpu: mean(members.map((m) => m.runs[round].cpu)),
      gen: mean(members.map((m) => m.runs[round].gen)),
      bad: members.reduce((n, m) => n + m.runs[round].bad, 0),
    })),
  }));
}
const families = familiesOf(variants);
const bare = families.at(-1);
/** `v`'s figure `field` against `reference`'s, round by round (bench/lib/paired.js). */
const perRound = (v, reference, field) =>
  pairedRatio(
    v.runs.map((r) => r[field]),
    reference.runs.map((r) => r[field]),
  );
if (INSTANCES > 1) {
  for (const f of families) {
    const each = f.members.map((m) => perRound(m, bare, 'cpu').median.toFixed(2));
    log(`${f.name.padEnd(20)} CPU ÷ bare per instance: ${each.join(', ')}`);
  }
}
for (const v of families) {
  const cpuRatio = perRound(v, bare, 'cpu').median;
  const rpsRatio = perRound(v, bare, 'rps').median;
  const bad = v.runs.reduce((n, r) => n + r.bad, 0);
  log(
    `${v.name.padEnd(20)} ${median(v.runs.map((r) => r.rps))
      .toFixed(0)
      .padStart(6)} req/s ${median(v.runs.map((r) => r.cpu))
      .toFixed(0)
      .padStart(
        6,
      )} µs/req   load generator ${median(v.runs.map((r) => r.gen)).toFixed(0)} µs/req   CPU ÷ bare ${cpuRatio.toFixed(2)}   req/s ÷ bare ${rpsRatio.toFixed(2)}${bad ? `   bad ${bad}` : ''}`,
  );
}
// Each further gateway variant against the first, round by round (a change judged on its own).
const gateways = families.filter((v) => !v.bare && !v.floor);
for (const v of gateways.slice(1)) {
  log(`${v.name.padEnd(20)} CPU ÷ ${gateways[0].name}, per round: ${describePaired(perRound(v, gateways[0], 'cpu'))}`);
}
const floor = families.find((v) => v.floor && v.skip.length === 0 && !v.args?.length);
if (floor) {
  for (const v of families.filter((x) => x !== floor && !x.bare)) {
    const cpuRatio = perRound(v, floor, 'cpu').median;
    const rpsRatio = perRound(v, floor, 'rps').median;
    log(`${v.name.padEnd(20)} against the spec floor: CPU ÷ floor ${cpuRatio.toFixed(2)}   req/s ÷ floor ${rpsRatio.toFixed(2)}`);
  }
}
