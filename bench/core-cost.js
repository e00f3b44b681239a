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
import { pathToFileURL } from 'node:url';
import { cannedHits } from './lib/canned-hits.js';
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
const CAPS = { retrieve: { maxK: Math.max(100, HITS), modes: ['sparse'] }, streaming: {} };

function cannedAnswer(e) {
  return JSON.stringify({ hits: cannedHits(e, HITS), usage: { candidates: HITS } });
}

/** Engines in memory: the request serialised, the canned answer parsed (now, or after the delay). */
function memoryTransports(config) {
  const e = Number(config.id.slice(1));
  const answer = cannedAnswer(e);
  const later = (value) =>
    DELAY_MS > 0 ? new Promise((resolve) => setTimeout(() => resolve(value()), DELAY_MS)) : Promise.resolve(value());
  return {
    kind: 'http',
    call(method, params) {
      JSON.stringify({ jsonrpc: '2.0', id: 1, method, params });
      if (method === 'initialize') {
        return Promise.resolve({ protocolVersion: 1, server: { name: `mem-${e}`, version: '1' }, capabilities: CAPS });
      }
      return later(() => (method === 'retrieve' ? JSON.parse(answer) : {}));
    },
    notify() {},
    close: () => Promise.resolve(),
  };
}

async function build(distDir, observed = values.observed) {
  const load = (file) => import(pathToFileURL(path.join(path.resolve(distDir), file)).href);
  const { ConfigSchema } = await load('core/config/schema.js');
  const { Gateway } = await load('core/gateway/gateway.js');
  const { Session } = await load('core/session/session.js');
  const { silentLogger } = await load('node/observability/log.js');
  // What the CLI installs (native cursor digests), when this build has them.
  await load('node/crypto/cursor-digests.js').then(
    async (m) => (await load('core/federation/cursor.js')).useCursorDigests(m.nodeCursorDigests),
    () => undefined,
  );
  const config = ConfigSchema.parse({
    engines: Array.from({ length: Number(values.engines) }, (_, i) => ({
      id: `e${i}`,
      transport: 'http',
      url: `http://e${i}.invalid/rcp`,
    })),
    gateway: { logLevel: 'silent' },
  });
  let service;
  let sessionOptions = {};
  let gateway;
  if (observed) {
    const { Operations } = await load('node/operations.js');
    const { default: pino } = await import('pino');
    // The request line's time as the gateway makes it (createLogger's isoTime, once per ms), where
    // the build has it; pino's own (a Date and an ISO string per line) in an older build.
    const { isoTime = pino.stdTimeFunctions.isoTime } = await load('node/observability/log.js').catch(() => ({}));
    const logger = pino(
      { level: values['log-level'], base: { svc: 'rcp-gateway' }, timestamp: isoTime },
      pino.destination({ dest: '/dev/null', sync: false }),
    );
    const ops = new Operations(config, logger);
    gateway = new Gateway(config, { logger, hooks: ops.hooks, transports: memoryTransports });
    service = ops.attach(gateway);
    sessionOptions = ops.sessionOptions();
  } else {
    gateway = new Gateway(config, { logger: silentLogger(), transports: memoryTransports });
    service = gateway;
  }
  await gateway.start();
  let id = 0;
  const one = async () => {
    const session = new Session(service, { transport: 'http', stateless: true, ...sessionOptions });
    const params = { query: 'rank fusion', k: 10 };
    if (values.meta !== undefined) params._meta = JSON.parse(values.meta);
    const value = { jsonrpc: '2.0', id: ++id, method: 'retrieve', params };
    const text = JSON.stringify(await session.handle({ value, headers: {} }));
    if (!text.includes('"hits":[{')) throw new Error(`unexpected answer: ${text.slice(0, 300)}`);
  };
  const name = path.relative(process.cwd(), path.resolve(distDir)) || distDir;
  return { name: observed ? `${name} (observed)` : name, gateway, one, cpu: 0, done: 0 };
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
