/**
 * A real Gateway and Session from a build's dist/ over engines that answer from memory: each
 * answer parsed from its JSON text and each request serialised, as a wire transport would, but no
 * kernel, HTTP parser or load generator. What bench/core-cost.js times and bench/instructions.js
 * counts: the part of the per-request cost that is the gateway's own code.
 */
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { cannedHits } from './canned-hits.js';

/**
 * @param {object} options
 * @param {string} options.dist the build's dist/ directory
 * @param {number} options.engines engines e0… in the config
 * @param {number} options.hits canned hits per engine answer
 * @param {number} options.delayMs engines answer after a timer of this many ms (0: at once)
 * @param {boolean} options.observed wrap the gateway as `serve` does (metrics, the request line to /dev/null)
 * @param {string} options.logLevel the observed logger's level
 * @param {string} [options.meta] JSON of a `_meta` sent with every request (parsed afresh for each)
 * @returns {Promise<{ name: string, gateway: { stop(): Promise<void> }, one: () => Promise<void> }>}
 */
export async function buildMemoryGateway({ dist, engines, hits, delayMs, observed, logLevel, meta }) {
  const load = (file) => import(pathToFileURL(path.join(path.resolve(dist), file)).href);
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
    engines: Array.from({ length: engines }, (_, i) => ({ id: `e${i}`, transport: 'http', url: `http://e${i}.invalid/rcp` })),
    gateway: { logLevel: 'silent' },
  });
  const transports = memoryTransports(hits, delayMs);
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
      { level: logLevel, base: { svc: 'rcp-gateway' }, timestamp: isoTime },
      pino.destination({ dest: '/dev/null', sync: false }),
    );
    const ops = new Operations(config, logger);
    gateway = new Gateway(config, { logger, hooks: ops.hooks, transports });
    service = ops.attach(gateway);
    sessionOptions = ops.sessionOptions();
  } else {
    gateway = new Gateway(config, { logger: silentLogger(), transports });
    service = gateway;
  }
  await gateway.start();
  let id = 0;
  const one = async () => {
    const session = new Session(service, { transport: 'http', stateless: true, ...sessionOptions });
    const params = { query: 'rank fusion', k: 10 };
    if (meta !== undefined) params._meta = JSON.parse(meta);
    const value = { jsonrpc: '2.0', id: ++id, method: 'retrieve', params };
    const text = JSON.stringify(await session.handle({ value, headers: {} }));
    if (!text.includes('"hits":[{')) throw new Error(`unexpected answer: ${text.slice(0, 300)}`);
  };
  const name = path.relative(process.cwd(), path.resolve(dist)) || dist;
  return { name: observed ? `${name} (observed)` : name, gateway, one };
}

/** Engines in memory: the request serialised, the canned answer parsed (now, or after the delay). */
function memoryTransports(hits, delayMs) {
  const caps = { retrieve: { maxK: Math.max(100, hits), modes: ['sparse'] }, streaming: {} };
  return (config) => {
    const e = Number(config.id.slice(1));
    const answer = JSON.stringify({ hits: cannedHits(e, hits), usage: { candidates: hits } });
    const later = (value) =>
      delayMs > 0 ? new Promise((resolve) => setTimeout(() => resolve(value()), delayMs)) : Promise.resolve(value());
    return {
      kind: 'http',
      call(method, params) {
        JSON.stringify({ jsonrpc: '2.0', id: 1, method, params });
        if (method === 'initialize') {
          return Promise.resolve({ protocolVersion: 1, server: { name: `mem-${e}`, version: '1' }, capabilities: caps });
        }
        return later(() => (method === 'retrieve' ? JSON.parse(answer) : {}));
      },
      notify() {},
      close: () => Promise.resolve(),
    };
  };
}
