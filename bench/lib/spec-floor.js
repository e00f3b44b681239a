#!/usr/bin/env node
/**
 * The spec floor: the bare fan-out ceiling (bare.js) plus only the per-request work RCP/1 asks
 * of any federating gateway, done with the gateway's own pure functions from dist/ so it is no
 * cheaper or dearer than the gateway's code for the same step. What it adds to bare.js:
 *
 * - the JSON-RPC envelope checked (§5) and `retrieve` params validated with the gateway's zod
 *   schema (a bad request is -32602, §12), one request deadline timer that cuts every leg still
 *   out when it fires, and the remaining budget and the federation depth/path checked and
 *   forwarded in `_meta` (§16.1, §16.2);
 * - partial failure (§16.2): a failed engine is skipped with a note, all failed is -32010;
 * - each engine's answer sanitised as untrusted input (§15.1, `sanitizeHits`);
 * - fusion with dedup, deterministic ties and origin tags (§16.3, the gateway's `fuse`);
 * - a signed pagination cursor when more hits exist (§10: the gateway's own sealing, the compact
 *   `sealFusedCursor` bound to `canonicalRequest`, or `sealCursor` in builds from before it).
 *
 * What it leaves out is what this gateway adds beyond the spec: the HTTP framework, the session,
 * breakers, limiters, retries, hedging, replicas, auth, quotas, experiments, logs, metrics, traces.
 * So gateway ÷ spec floor is the cost of those, and spec floor ÷ bare the cost of the spec itself.
 *
 *   node bench/lib/spec-floor.js --engines URL[,URL…] [--connections 64] [--dist DIR]
 *        [--skip validate,deadline,sanitize,fuse,cursor] [--deadline-ms 30000] [--cut dispatch|signal]
 *
 * --skip leaves steps out, to price each (bench/compare.js --floor-variant): `validate` (zod),
 * `deadline` (timer, cuttable legs, `_meta` forwarding, loop checks), `sanitize`, `fuse` (the
 * gateway's fuse replaced by bare.js's few-line RRF), `cursor`. Skipping all five is bare.js.
 *
 * The deadline is priced at its cheapest, as the gateway pays it: each leg goes through
 * `Pool.dispatch` with one small handler that can be cut (as src/node/upstream/answer-reader.ts
 * does), and one timer per request cuts them all; no AbortController or signal listener per leg.
 * With `deadline` skipped a leg is `Pool.request` + `body.json()`, exactly as in bare.js.
 * `--cut signal` does the deadline the obvious way instead: an AbortController per request whose
 * signal goes to `Pool.request` (undici listens on it per leg). It costs far more: an earlier
 * floor built that way was taken for the least the spec costs (bench/RESULTS.md, "Spec floor").
 *
 * Reports `{type:'listening', url}` over IPC (or prints `{"listening":"url"}` without IPC).
 */
import http from 'node:http';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { Pool } from 'undici';

const { values } = parseArgs({
  options: {
    engines: { type: 'string' },
    connections: { type: 'string', default: '64' },
    host: { type: 'string', default: '127.0.0.1' },
    dist: { type: 'string', default: path.join(import.meta.dirname, '../../dist') },
    skip: { type: 'string', default: '' },
    'deadline-ms': { type: 'string', default: '30000' },
    cut: { type: 'string', default: 'dispatch' },
  },
});
const SKIP = new Set(values.skip.split(',').filter(Boolean));
for (const step of SKIP) {
  if (!['validate', 'deadline', 'sanitize', 'fuse', 'cursor'].includes(step)) throw new Error(`--skip: unknown step ${step}`);
}
const load = (file) => import(pathToFileURL(path.join(path.resolve(values.dist), file)).href);
const { RetrieveParamsSchema, parseParams } = await load('core/protocol/params.js');
const { sanitizeHits } = await load('core/federation/sanitize.js');
const { fuse } = await load('core/federation/fusion/fuse.js');
const { cursorKey, requestFingerprint, sealCursor, canonicalRequest, useCursorDigests } = await load('core/federation/cursor.js');
// The compact fused cursor, when this build has it (else version 1, as such a build issued).
const compact = await load('core/federation/fused-cursor.js').catch(() => undefined);
// The cursor digests the CLI installs, when this build has them.
await load('node/crypto/cursor-digests.js').then(
  (m) => useCursorDigests(m.nodeCursorDigests),
  () => undefined,
);

const SELF = 'spec-floor';
const HEADROOM = 2;
const DEADLINE_MS = Number(values['deadline-ms']);
if (!['dispatch', 'signal'].includes(values.cut)) throw new Error(`--cut: dispatch or signal, not ${values.cut}`);
const CUT_BY_SIGNAL = values.cut === 'signal';
const CURSOR_TTL_MS = 600_000;
const key = cursorKey(undefined);
const engines = (values.engines ?? '')
  .split(',')
  .filter(Boolean)
  .map((url, i) => {
    const parsed = new URL(url);
    return {
      name: `e${i}`,
      path: `${parsed.pathname.replace(/\/+$/, '')}/retrieve`,
      pool: new Pool(parsed.origin, { connections: Number(values.connections), pipelining: 1, keepAliveTimeout: 30_000 }),
    };
  });
let nextId = 1;

const JSON_HEADERS = { 'content-type': 'application/json' };

/** bare.js's leg, for `--skip deadline` (nothing can cut it), or cut by `signal` (`--cut signal`). */
async function askUncuttable(engine, params, signal) {
  const { body } = await engine.pool.request({
    path: engine.path,
    method: 'POST',
    headers: JSON_HEADERS,
    body: JSON.stringify({ jsonrpc: '2.0', id: nextId++, method: 'retrieve', params }),
    ...(signal ? { signal } : {}),
  });
  return listOf(engine, params, await body.json());
}

/** One leg off undici's dispatcher that the request's deadline can cut (`cut`). */
class Leg {
  constructor(resolve, reject) {
    this.resolve = resolve;
    this.reject = reject;
    this.done = false;
    this.status = 0;
    this.chunks = [];
    this.abort = undefined;
  }
  onConnect(abort) {
    this.abort = abort;
    if (this.done) abort(new Error('cut'));
  }
  onHeaders(status) {
    this.status = status;
    return true;
  }
  onData(chunk) {
    this.chunks.push(chunk);
    return true;
  }
  onComplete() {
    if (this.done) return;
    this.done = true;
    if (this.status !== 200) return this.reject(new Error(`HTTP ${this.status}`));
    try {
      this.resolve(JSON.parse((this.chunks.length === 1 ? this.chunks[0] : Buffer.concat(this.chunks)).toString('utf8')));
    } catch (err) {
      this.reject(err);
    }
  }
  onError(err) {
    if (this.done) return;
    this.done = true;
    this.reject(err);
  }
  cut() {
    if (this.done) return;
    this.done = true;
    this.reject(new Error('deadline'));
    this.abort?.(new Error('deadline'));
  }
}

function askCuttable(engine, params, legs) {
  return new Promise((resolve, reject) => {
    const leg = new Leg(resolve, reject);
    legs.push(leg);
    engine.pool.dispatch(
      {
        path: engine.path,
        method: 'POST',
        headers: JSON_HEADERS,
        body: JSON.stringify({ jsonrpc: '2.0', id: nextId++, method: 'retrieve', params }),
      },
      leg,
    );
  }).then((answer) => listOf(engine, params, answer));
}

function listOf(engine, params, answer) {
  if (SKIP.has('sanitize')) return { engine: engine.name, weight: 1, hits: answer.result.hits };
  const clean = sanitizeHits(answer.result, params.k);
  if ('error' in clean) throw new Error(clean.error);
  return { engine: engine.name, weight: 1, hits: clean.hits };
}

function reply(res, id, message) {
  const out = JSON.stringify({ jsonrpc: '2.0', id, ...message });
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(out) });
  res.end(out);
}

/** bare.js's RRF, for `--skip fuse`: no dedup policy, tie order, origin tags or merged meta. */
function bareRrf(lists, k) {
  const fused = new Map();
  for (const list of lists) {
    for (let rank = 0; rank < list.hits.length; rank++) {
      const hit = list.hits[rank];
      const entry = fused.get(hit.id);
      const score = 1 / (60 + rank + 1);
      if (entry) entry.score += score;
      else fused.set(hit.id, { hit, score, engine: list.engine, rank: rank + 1 });
    }
  }
  const hits = [...fused.values()]
    .sort((a, b) => b.score - a.score)
    .slice(0, k)
    .map((entry) => ({ ...entry.hit, score: entry.score, meta: { engine: entry.engine, engineRank: entry.rank } }));
  return { hits, total: fused.size };
}

async function retrieve(request) {
  const params = SKIP.has('validate') ? (request.params ?? {}) : parseParams(RetrieveParamsSchema, request.params ?? {});
  const k = params.k ?? 10;
  if (SKIP.has('deadline'))
    return answer(params, k, await Promise.allSettled(engines.map((e) => askUncuttable(e, { query: params.query, k: k * HEADROOM }))));
  const started = performance.now();
  const legs = [];
  const controller = CUT_BY_SIGNAL ? new AbortController() : undefined;
  const timer = setTimeout(() => {
    controller?.abort();
    for (const leg of legs) leg.cut();
  }, DEADLINE_MS);
  try {
    const meta = params._meta ?? {};
    const federation = meta.federation ?? {};
    const depth = federation.depth ?? 3;
    const path = federation.path ?? [];
    // §16.1: no forwarding at depth 0, nor to a path this gateway is already on.
    if (depth <= 0 || path.includes(SELF)) throw Object.assign(new Error('no engine may be asked'), { code: -32010 });
    const legMeta = {
      deadlineMs: DEADLINE_MS - Math.ceil(performance.now() - started) - 1,
      federation: { depth: depth - 1, path: [...path, SELF] },
    };
    const ask = (e) => {
      const legParams = { query: params.query, k: k * HEADROOM, _meta: legMeta };
      return controller ? askUncuttable(e, legParams, controller.signal) : askCuttable(e, legParams, legs);
    };
    const settled = await Promise.allSettled(engines.map(ask));
    return answer(params, k, settled);
  } finally {
    clearTimeout(timer);
  }
}

function answer(params, k, legs) {
  // §16.2 partial failure: a failed engine is skipped and noted; all failed is -32010, not an empty success.
  const lists = [];
  const notes = [];
  for (let i = 0; i < legs.length; i++) {
    if (legs[i].status === 'fulfilled') lists.push(legs[i].value);
    else notes.push(`${engines[i].name}: failed`);
  }
  if (lists.length === 0) throw Object.assign(new Error('every engine failed'), { code: -32010 });
  const fused = SKIP.has('fuse') ? bareRrf(lists, k) : fuse(lists, 'rrf', { k, rrfK: 60, dedup: 'id' });
  const usage = { candidates: lists.reduce((n, l) => n + l.hits.length, 0) };
  if (notes.length > 0) usage.notes = notes;
  const result = { hits: fused.hits, usage };
  if (fused.total > k && !SKIP.has('cursor')) {
    const position = {
      kind: 'fused',
      engines: lists.map((l) => l.engine),
      depth: Object.fromEntries(lists.map((l) => [l.engine, k * HEADROOM])),
      segment: 0,
      offset: k,
    };
    const expiresAt = Date.now() + CURSOR_TTL_MS;
    result.nextCursor = compact
      ? compact.sealFusedCursor({ method: 'retrieve', expiresAt, position }, canonicalRequest(params, 'x-rcpgw'), key)
      : sealCursor({ method: 'retrieve', fingerprint: requestFingerprint(params, 'x-rcpgw'), expiresAt, position }, key);
  }
  result._meta = { engines: lists.map((l) => l.engine) };
  return result;
}

const server = http.createServer({ keepAliveTimeout: 60_000 }, (req, res) => {
  const chunks = [];
  req.on('data', (chunk) => chunks.push(chunk));
  req.on('end', () => {
    let request;
    try {
      request = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    } catch {
      return reply(res, null, { error: { code: -32700, message: 'parse error' } });
    }
    // §5: a request is jsonrpc "2.0" with a string method and a string/number id.
    const valid =
      request !== null &&
      typeof request === 'object' &&
      request.jsonrpc === '2.0' &&
      request.method === 'retrieve' &&
      (typeof request.id === 'string' || typeof request.id === 'number');
    if (!valid) return reply(res, null, { error: { code: -32600, message: 'invalid request' } });
    retrieve(request).then(
      (result) => reply(res, request.id, { result }),
      (err) =>
        reply(res, request.id, {
          error: typeof err?.code === 'number' ? { code: err.code, message: err.message } : { code: -32603, message: 'upstream failed' },
        }),
    );
  });
});
await new Promise((resolve) => server.listen(0, values.host, resolve));
const url = `http://${values.host}:${server.address().port}/rcp`;
if (process.send) {
  process.on('disconnect', () => process.exit(0));
  process.send({ type: 'listening', url });
} else {
  process.stdout.write(`${JSON.stringify({ listening: url })}\n`);
}
for (const signal of ['SIGTERM', 'SIGINT']) process.on(signal, () => process.exit(0));
