#!/usr/bin/env node
// An independent RCP/1 test engine (spec: ../shared/rcp/spec.md). Plain ESM,
// node: builtins only, shares no code with the gateway under test.
//
//   node test/engines/test-engine.mjs --transport stdio|http [--port 0] [--host 127.0.0.1]
//     [--id NAME] [--events FILE] [--control FILE] [--caps JSON] [--corpus FILE]
//     [--id-prefix P] [--reverse] [--fault MODE] [--fault-all] [--fault-init MODE]
//     [--delay-ms N] [--fail-code C] [--fail-rate R] [--seed S] [--retry-after-ms N]
//     [--huge-bytes N] [--progress-frames N] [--progress-interval-ms N]
//     [--protocol-version N] [--dump-corpus] [--tail-rate R] [--tail-delay-ms N]
//     [--single-session] [--strict-options]
//
// --tail-rate R delays that share of requests (not initialize/info/ping) by --tail-delay-ms,
// drawn from its own seeded generator: a latency tail, on top of any fault mode.
// --single-session (HTTP): one session per process, like the reference SDK HTTP servers: the
//   first `initialize` opens it, every later one is -32600 (§13), and calls before it are -32001.
// --strict-options: `retrieve` rejects options its capabilities do not advertise (§7.7, §8):
//   filter/rerank/mmr/fusion/tokenBudget/unit → -32005 `data.option`, a filter field → -32602
//   `data.field`. Without it the engine ignores options it does not know (as many do).
// A `filter` capability makes `retrieve` apply filters (§8) over each document's `meta` plus
//   `len` (its number of terms).
//
// Fault modes: ok hang slow fail crash garbage hits-not-array hits-without-ids
// nonnumeric-scores duplicate-ids too-many-hits wrong-id-type huge rate-limit
// close-mid-answer unknown-id nan-score cancelled.
import fs from 'node:fs';
import http from 'node:http';
import process from 'node:process';
import { Buffer } from 'node:buffer';
import { setTimeout as delay } from 'node:timers';

// ---------------------------------------------------------------- options --
const DEFAULTS = {
  transport: 'stdio',
  port: 0,
  host: '127.0.0.1',
  id: 'engine',
  events: '',
  control: '',
  caps: '',
  corpus: '',
  idPrefix: '',
  reverse: false,
  fault: 'ok',
  faultAll: false,
  faultInit: 'ok',
  delayMs: 500,
  failCode: -32603,
  failRate: 1,
  seed: 42,
  retryAfterMs: 1000,
  hugeBytes: 5 * 1024 * 1024,
  progressFrames: 3,
  progressIntervalMs: 0,
  protocolVersion: 1,
  dumpCorpus: false,
  tailRate: 0,
  tailDelayMs: 100,
  singleSession: false,
  strictOptions: false,
};
const camel = (s) => s.replace(/-([a-z])/g, (_, c) => c.toUpperCase());

function parseArgs(argv) {
  const o = {};
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (!a.startsWith('--')) continue;
    const next = argv[i + 1];
    if (next === undefined || next.startsWith('--')) o[camel(a.slice(2))] = true;
    else {
      o[camel(a.slice(2))] = next;
      i++;
    }
  }
  return o;
}
/** Coerce a raw option bag (CLI strings or control-file JSON) onto DEFAULTS' types. */
function coerce(raw) {
  const out = {};
  for (const [k0, v] of Object.entries(raw)) {
    const k = camel(k0);
    const d = DEFAULTS[k];
    if (typeof d === 'number') out[k] = Number(v);
    else if (typeof d === 'boolean') out[k] = v === true || v === 'true' || v === '1';
    else out[k] = v;
  }
  return out;
}
const OPTS = { ...DEFAULTS, ...coerce(parseArgs(process.argv.slice(2))) };
const ENGINE = String(OPTS.id);
const CAPS = OPTS.caps ? JSON.parse(OPTS.caps) : { retrieve: { maxK: 50, modes: ['sparse'], scoreFloor: 0 }, streaming: {} };
const diag = (...a) => process.stderr.write(`[test-engine ${ENGINE}] ${a.join(' ')}\n`);

/** Options in force for one request: CLI options overlaid by the control file. */
function currentOpts() {
  if (!OPTS.control) return OPTS;
  try {
    return { ...OPTS, ...coerce(JSON.parse(fs.readFileSync(OPTS.control, 'utf8'))) };
  } catch (e) {
    diag('control file unreadable:', e.message);
    return OPTS;
  }
}

// ----------------------------------------------------------------- events --
function event(obj) {
  if (!OPTS.events) return;
  fs.appendFileSync(OPTS.events, JSON.stringify({ ...obj, engine: ENGINE, t: Date.now() }) + '\n');
}
process.on('exit', (code) => event({ ev: 'exit', code }));
for (const sig of ['SIGTERM', 'SIGINT']) process.on(sig, () => process.exit(0));

// ------------------------------------------------------------ determinism --
function fnv1a(str) {
  let h = 0x811c9dc5;
  for (let i = 0; i < str.length; i++) {
    h ^= str.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}
function mulberry32(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const faultRng = mulberry32(Number(OPTS.seed) || 0);
const tailRng = mulberry32((Number(OPTS.seed) || 0) + 7919);
const tokens = (s) =>
  String(s)
    .toLowerCase()
    .split(/[^\p{L}\p{N}]+/u)
    .filter(Boolean);

// ----------------------------------------------------------------- corpus --
const VOCAB = [
  'retrieval',
  'ranking',
  'fusion',
  'vector',
  'sparse',
  'dense',
  'graph',
  'index',
  'query',
  'engine',
  'protocol',
  'stream',
  'cancel',
  'token',
  'score',
  'cache',
  'search',
  'memory',
  'context',
  'gateway',
];
function builtinCorpus() {
  const rnd = mulberry32(20240601);
  const docs = [];
  for (let i = 1; i <= 40; i++) {
    const n = 3 + Math.floor(rnd() * 4);
    const words = [];
    for (let j = 0; j < n; j++) words.push(VOCAB[Math.floor(rnd() * VOCAB.length)]);
    docs.push({ id: `d${i}`, text: words.join(' ') });
  }
  return docs;
}
/** The live index: id(string) → {id, text, meta?, key}. `key` (the un-prefixed id) seeds the tiebreak,
 *  so engines differing only in --id-prefix rank identically. Insertion order is stable. */
const INDEX = new Map();
for (const d of OPTS.corpus ? JSON.parse(fs.readFileSync(OPTS.corpus, 'utf8')) : builtinCorpus()) {
  const id = OPTS.idPrefix ? `${OPTS.idPrefix}${d.id}` : d.id;
  INDEX.set(String(id), { ...d, id, key: String(d.id) });
}
if (OPTS.dumpCorpus) {
  process.stdout.write(JSON.stringify([...INDEX.values()].map(({ id, text }) => ({ id, text }))) + '\n');
  process.exit(0);
}

/** Term-overlap score + a tiny per-doc tiebreak (< 0.01); 0 when no overlap. */
function scoreText(queryTerms, text, key) {
  const dt = new Set(tokens(text));
  let overlap = 0;
  for (const t of queryTerms) if (dt.has(t)) overlap++;
  return overlap === 0 ? 0 : overlap + (fnv1a(String(key)) % 997) / 1e5;
}
/** Ranked matches (score > 0) best-first; `--reverse` inverts the order, keeping scores descending. */
function rank(queryText, opts) {
  const qt = new Set(tokens(queryText));
  let list = [...INDEX.values()].map((d) => ({ d, s: scoreText(qt, d.text, d.key ?? d.id) })).filter((x) => x.s > 0);
  list.sort((a, b) => b.s - a.s || String(a.d.id).localeCompare(String(b.d.id)));
  if (opts.reverse && list.length) {
    const hi = list[0].s,
      lo = list[list.length - 1].s;
    list = list.reverse().map((x) => ({ d: x.d, s: hi + lo - x.s }));
  }
  return list;
}
const toHit = (x, includeText = true) => ({
  id: x.d.id,
  score: x.s,
  ...(includeText ? { text: x.d.text } : {}),
  meta: { ...(x.d.meta ?? {}), src: ENGINE },
});

// ----------------------------------------------------------------- errors --
class RpcError extends Error {
  constructor(code, message, data) {
    super(message);
    this.code = code;
    this.data = data;
  }
}
const isObj = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);
const isId = (v) => typeof v === 'string' || (typeof v === 'number' && Number.isFinite(v));
const errFrame = (id, code, message, data) => ({ jsonrpc: '2.0', id, error: { code, message, ...(data !== undefined ? { data } : {}) } });
const invalid = (field, detail) => new RpcError(-32602, `Invalid params: ${field}`, { field, detail });
/** Query input (§4.8): a string, a Content block, or an array of blocks → plain text. */
function queryText(q, field = 'query') {
  if (typeof q === 'string') return q;
  const blocks = Array.isArray(q) ? q : isObj(q) ? [q] : null;
  if (!blocks) throw invalid(field, 'expected string or Content');
  return blocks
    .map((b) => {
      if (!isObj(b)) throw invalid(field, 'bad Content block');
      if (b.type !== 'text') throw new RpcError(-32005, `modality ${b.type} not supported`, { option: String(b.type), field });
      if (typeof b.text !== 'string') throw invalid(field, 'text block without text');
      return b.text;
    })
    .join(' ');
}
const intOr = (v, dflt, field) => {
  if (v === undefined || v === null) return dflt;
  if (!Number.isInteger(v) || v < 0) throw invalid(field, 'expected a non-negative integer');
  return v;
};
const strArray = (v, field) => {
  if (!Array.isArray(v)) throw invalid(field, 'expected an array');
  return v;
};

// ---------------------------------------------------------------- options --
/** --strict-options: §7.7 "MUST return -32005 rather than silently degrade"; §8 fields → -32602. */
function refuseUnadvertised(p, cap) {
  const unsupported = (option) => new RpcError(-32005, `option ${option} not supported`, { option });
  if (p.filter !== undefined && p.filter !== null) {
    if (!CAPS.filter) throw unsupported('filter');
    const fields = Array.isArray(CAPS.filter.fields) ? CAPS.filter.fields : Object.keys(CAPS.filter.fields ?? {});
    for (const field of filterFields(p.filter)) if (!fields.includes(field)) throw invalid(`filter.${field}`, 'field not advertised');
  }
  if (isObj(p.rerank) && cap.rerankBuiltin !== true) throw unsupported('rerank');
  if (p.mmr !== undefined && p.mmr !== null && cap.mmr !== true) throw unsupported('mmr');
  if (isObj(p.fusion) && !(cap.fusion ?? []).includes(p.fusion.method)) throw unsupported('fusion');
  if (p.tokenBudget !== undefined && p.tokenBudget !== null && cap.tokenBudget !== true) throw unsupported('tokenBudget');
  if (typeof p.unit === 'string' && !(cap.units ?? ['chunk', 'passage']).includes(p.unit)) throw unsupported('unit');
}
function filterFields(node) {
  if (!isObj(node)) return [];
  if (Array.isArray(node.and) || Array.isArray(node.or)) return (node.and ?? node.or).flatMap(filterFields);
  if (node.not !== undefined) return filterFields(node.not);
  return typeof node.field === 'string' ? [node.field] : [];
}
/** §8 filter evaluation (the operators a test needs). */
function matches(node, doc) {
  if (Array.isArray(node.and)) return node.and.every((n) => matches(n, doc));
  if (Array.isArray(node.or)) return node.or.some((n) => matches(n, doc));
  if (node.not !== undefined) return !matches(node.not, doc);
  const v = doc[node.field];
  switch (node.op) {
    case 'eq':
      return v === node.value;
    case 'ne':
      return v !== node.value;
    case 'gt':
      return v > node.value;
    case 'gte':
      return v >= node.value;
    case 'lt':
      return v < node.value;
    case 'lte':
      return v <= node.value;
    case 'in':
      return Array.isArray(node.value) && node.value.includes(v);
    case 'nin':
      return Array.isArray(node.value) && !node.value.includes(v);
    case 'exists':
      return (v !== undefined) === (node.value !== false);
    default:
      throw new RpcError(-32005, `filter operator ${node.op} not supported`, { option: 'filter.op' });
  }
}

// ---------------------------------------------------------------- methods --
// §7 roster: method → gating capability (null = always callable).
const METHODS = {
  initialize: null,
  info: null,
  ping: null,
  shutdown: null,
  embed: 'embed',
  'embed/sparse': 'sparseEmbed',
  'embed/multi': 'multiVector',
  rerank: 'rerank',
  retrieve: 'retrieve',
  'query/transform': 'transform',
  graph: 'graph',
  'index/add': 'index',
  'index/delete': 'index',
  'catalog/list': 'catalog',
  feedback: 'feedback',
  'memory/build': 'memory',
  'memory/recall': 'memory',
  'x-test/echo': 'x-test',
};
const LIFECYCLE = new Set(['initialize', 'info', 'ping', 'shutdown']);
const serverInfo = () => ({
  protocolVersion: OPTS.protocolVersion,
  server: { name: `test-engine-${ENGINE}`, version: '1.0.0' },
  capabilities: CAPS,
});
const memories = new Map();
let mintCounter = 0;

function hashVector(text, dim, salt = '') {
  const v = [];
  for (let j = 0; j < dim; j++) v.push((fnv1a(`${salt}${text}#${j}`) / 4294967295) * 2 - 1);
  const norm = Math.hypot(...v) || 1;
  return v.map((x) => x / norm);
}
function f32base64(vec) {
  const buf = Buffer.alloc(vec.length * 4);
  vec.forEach((x, i) => buf.writeFloatLE(x, i * 4));
  return buf.toString('base64');
}

/** Core protocol logic. Returns a `result` object or throws RpcError. */
function dispatch(method, p, session, opts) {
  switch (method) {
    case 'initialize': {
      // §7.1 / §13
      if (session.initialized && !session.stateless) throw new RpcError(-32600, 'already initialized');
      const v = p.protocolVersion;
      if (!Number.isInteger(v)) throw invalid('protocolVersion', 'expected an integer');
      if (v < 1) throw new RpcError(-32002, 'no common protocol version', { detail: 'server supports 1..' + OPTS.protocolVersion });
      session.initialized = true;
      session.clientCaps = isObj(p.capabilities) ? p.capabilities : {};
      return { ...serverInfo(), protocolVersion: Math.min(v, OPTS.protocolVersion) };
    }
    case 'info':
      return serverInfo(); // §7.2
    case 'ping':
      return p.nonce !== undefined ? { nonce: p.nonce } : {}; // §7.15
    case 'shutdown':
      return {}; // §7.12
    case 'retrieve': {
      // §7.7
      const q = queryText(p.query);
      const cap = CAPS.retrieve ?? {};
      let k = intOr(p.k, 10, 'k');
      if (Number.isInteger(cap.maxK)) k = Math.min(k, cap.maxK); // clamp, never an error (§12)
      const notes = [];
      if (p.mode !== undefined && !(cap.modes ?? []).includes(p.mode)) {
        if (p.strict !== false) throw new RpcError(-32005, `mode ${p.mode} not supported`, { option: String(p.mode), field: 'mode' });
        notes.push(`mode ${p.mode} unsupported; fell back to ${(cap.modes ?? ['sparse'])[0]}`);
      }
      if (OPTS.strictOptions) refuseUnadvertised(p, cap);
      let list = rank(q, opts);
      if (typeof p.minScore === 'number') list = list.filter((x) => x.s >= p.minScore);
      if (CAPS.filter && isObj(p.filter))
        list = list.filter((x) => matches(p.filter, { ...(x.d.meta ?? {}), len: tokens(x.d.text).length }));
      let offset = 0;
      if (CAPS.pagination && p.cursor !== undefined) {
        // §10
        offset = Number(Buffer.from(String(p.cursor), 'base64').toString('utf8'));
        if (!Number.isInteger(offset) || offset < 0) throw invalid('cursor', 'malformed cursor');
      }
      const page = list.slice(offset, offset + k);
      const result = { hits: page.map((x) => toHit(x, p.includeText !== false)), usage: { candidates: list.length } };
      if (CAPS.pagination && offset + k < list.length) result.nextCursor = Buffer.from(String(offset + k)).toString('base64');
      if (notes.length) result.usage.notes = notes;
      return result;
    }
    case 'embed': {
      // §7.3 (+ legacy `texts`)
      const field = p.inputs !== undefined ? 'inputs' : 'texts';
      const inputs = strArray(p.inputs ?? p.texts, field);
      const cap = CAPS.embed ?? {};
      if (Number.isInteger(cap.batchLimit) && inputs.length > cap.batchLimit) throw invalid(field, 'exceeds embed.batchLimit');
      const dim = Number.isInteger(cap.dimension) ? cap.dimension : 8;
      const vecs = inputs.map((x, i) => hashVector(queryText(x, `${field}[${i}]`), dim));
      const enc = p.encoding ?? 'json';
      if (enc === 'json') return { vectors: vecs, dimension: dim };
      if (enc === 'f32-base64' && (cap.encodings ?? []).includes(enc))
        return { vectors: vecs.map(f32base64), encoding: enc, dimension: dim };
      throw new RpcError(-32005, `encoding ${enc} not supported`, { option: String(enc), field: 'encoding' });
    }
    case 'embed/sparse': {
      // §7.4
      const vocab = CAPS.sparseEmbed?.vocabulary ?? 30522;
      return {
        sparse: strArray(p.texts ?? p.inputs, 'texts').map((t, i) => {
          const w = new Map();
          for (const tok of tokens(queryText(t, `texts[${i}]`))) {
            const ix = fnv1a(tok) % vocab;
            w.set(ix, (w.get(ix) ?? 0) + 1);
          }
          const indices = [...w.keys()].sort((a, b) => a - b);
          return { indices, values: indices.map((ix) => w.get(ix)) };
        }),
      };
    }
    case 'embed/multi': {
      // §7.5
      const dim = CAPS.multiVector?.dimension ?? 4;
      const matrices = strArray(p.inputs ?? p.texts, 'inputs').map((t, i) => {
        const toks = tokens(queryText(t, `inputs[${i}]`));
        return (toks.length ? toks : ['']).map((tok) => hashVector(tok, dim));
      });
      return { matrices, dimension: dim };
    }
    case 'rerank': {
      // §7.6
      const q = new Set(tokens(queryText(p.query)));
      const passages = strArray(p.passages, 'passages').map((x, i) => queryText(x, `passages[${i}]`));
      const cap = CAPS.rerank ?? {};
      if (p.method !== undefined && !(cap.methods ?? []).includes(p.method)) {
        throw new RpcError(-32005, `rerank method ${p.method} not supported`, { option: String(p.method), field: 'method' });
      }
      if (Number.isInteger(cap.maxCandidates) && passages.length > cap.maxCandidates)
        throw invalid('passages', 'exceeds rerank.maxCandidates');
      const scores = passages.map((t, i) => scoreText(q, t, `${i}:${t}`));
      const order = scores.map((_, i) => i).sort((a, b) => scores[b] - scores[a] || a - b);
      return { scores, order: order.slice(0, intOr(p.topN, order.length, 'topN')) };
    }
    case 'query/transform': {
      // §7.8
      const q = queryText(p.query);
      if (!(CAPS.transform?.methods ?? []).includes(p.method)) {
        throw new RpcError(-32005, `transform method ${p.method} not supported`, { option: String(p.method), field: 'method' });
      }
      const n = intOr(p.n, 3, 'n');
      const queries = Array.from({ length: n }, (_, i) => `${q} (${p.method} ${i + 1})`);
      return p.method === 'hyde' ? { queries, hypothetical: `A passage about ${q}.` } : { queries };
    }
    case 'graph': {
      // §7.9
      if (!(CAPS.graph?.ops ?? []).includes(p.op))
        throw new RpcError(-32005, `graph op ${p.op} not supported`, { option: String(p.op), field: 'op' });
      const k = intOr(p.k, 10, 'k');
      const communities = () => {
        const by = new Map();
        for (const d of INDEX.values()) {
          const w = tokens(d.text)[0] ?? 'misc';
          by.set(w, [...(by.get(w) ?? []), d.id]);
        }
        return [...by.entries()].map(([w, ids]) => ({
          id: `c-${w}`,
          level: 0,
          summary: `${ids.length} documents about ${w}`,
          score: ids.length,
        }));
      };
      if (p.op === 'local' || p.op === 'drift') {
        const q = typeof p.query === 'string' ? p.query : '';
        const hits = rank(q, opts)
          .slice(0, k)
          .map((x) => ({ ...toHit(x), unit: 'node' }));
        return p.op === 'drift' ? { hits, followups: [`${q} follow-up 1`, `${q} follow-up 2`] } : { hits };
      }
      if (p.op === 'global')
        return {
          summary: `Global summary of ${INDEX.size} documents`,
          communities: communities()
            .slice(0, k)
            .map(({ id, summary, score }) => ({ id, summary, score })),
        };
      if (p.op === 'communities') return { communities: communities().map(({ id, level, summary }) => ({ id, level, summary })) };
      // neighbors: docs sharing a term with any seed doc.
      const seeds = strArray(p.seedIds ?? [], 'seedIds').map(String);
      const nodes = [],
        edges = [];
      for (const s of seeds) {
        const sd = INDEX.get(s);
        if (!sd) continue;
        for (const x of rank(sd.text, {})
          .filter((x) => String(x.d.id) !== s)
          .slice(0, k)) {
          nodes.push({ id: x.d.id, score: x.s });
          edges.push({ src: s, dst: String(x.d.id), weight: x.s });
        }
      }
      return { nodes, edges };
    }
    case 'index/add': {
      // §7.10 — upsert by id, mint otherwise, ids in input order
      if (CAPS.index?.writable !== true) throw new RpcError(-32003, 'index is not writable', { detail: 'index.writable is false' });
      const docs = strArray(p.documents, 'documents');
      docs.forEach((d, i) => {
        if (!isObj(d) || typeof d.text !== 'string') throw invalid(`documents[${i}].text`, 'expected string');
      });
      return {
        ids: docs.map((d) => {
          const id = d.id !== undefined ? String(d.id) : `${OPTS.idPrefix}m${++mintCounter}`;
          INDEX.delete(id);
          INDEX.set(id, { id, text: d.text, ...(isObj(d.meta) ? { meta: d.meta } : {}) });
          return id;
        }),
      };
    }
    case 'index/delete': {
      // §7.11 — idempotent
      let deleted = 0;
      for (const id of strArray(p.ids, 'ids')) if (INDEX.delete(String(id))) deleted++;
      return { deleted };
    }
    case 'catalog/list':
      return { engines: [] };
    case 'feedback':
      return { accepted: strArray(p.signals, 'signals').length }; // §7.16
    case 'memory/build': {
      // §7.17
      const id = typeof p.memoryId === 'string' ? p.memoryId : `mem-${memories.size + 1}`;
      const docs = p.documents !== undefined ? strArray(p.documents, 'documents') : [...INDEX.values()];
      memories.set(
        id,
        docs.map((d) => String(d.text ?? '')),
      );
      return { memoryId: id, tokens: docs.reduce((n, d) => n + tokens(d.text ?? '').length, 0) };
    }
    case 'memory/recall': {
      const q = queryText(p.query);
      if (p.memoryId !== undefined && !memories.has(p.memoryId)) throw new RpcError(-32015, 'unknown memoryId', { field: 'memoryId' });
      const top = rank(q, opts).slice(0, intOr(p.n, 3, 'n'));
      return { clues: top.map((x) => ({ query: x.d.text, seedIds: [String(x.d.id)], weight: x.s })), hits: top.map((x) => toHit(x)) };
    }
    case 'x-test/echo':
      return { echo: p };
    default:
      throw new RpcError(-32004, `unknown method ${method}`);
  }
}

// ----------------------------------------------------------------- faults --
/** Which fault mode governs this method (faults never touch shutdown). */
function faultFor(method, opts) {
  if (method === 'initialize' || method === 'info' || method === 'ping') return opts.faultInit || 'ok';
  if (method === 'shutdown') return 'ok';
  return method === 'retrieve' || opts.faultAll ? opts.fault || 'ok' : 'ok';
}
const NAN_SENTINEL = '__rcp_test_nan__';
/** Result-shape faults: corrupt a valid result in the requested way. */
function corrupt(mode, result, k, opts) {
  const hits = Array.isArray(result.hits) ? result.hits : null;
  switch (mode) {
    case 'hits-not-array':
      return hits ? { ...result, hits: { notAnArray: true } } : result;
    case 'hits-without-ids':
      return hits ? { ...result, hits: hits.map(({ id: _id, ...h }) => h) } : result;
    case 'nonnumeric-scores':
      if (Array.isArray(result.scores)) return { ...result, scores: result.scores.map(String) };
      return hits ? { ...result, hits: hits.map((h) => ({ ...h, score: String(h.score) })) } : result;
    case 'duplicate-ids':
      return hits
        ? { ...result, hits: hits.flatMap((h) => [h, { ...h, score: h.score - 0.001 }]).slice(0, Math.max(2, hits.length)) }
        : result;
    case 'too-many-hits': {
      // 3×k hits, distinct ids, scores still descending and ≥ 0
      if (!hits) return result;
      const n = 3 * Math.max(k, 1),
        floor = hits.length ? hits[hits.length - 1].score : 1;
      const extra = Array.from({ length: n }, (_, i) => ({
        id: `extra-${i + 1}`,
        score: floor * (1 - (i + 1) / (n + 2)),
        text: 'padding',
        meta: { src: ENGINE },
      }));
      return { ...result, hits: hits.concat(extra).slice(0, n) };
    }
    case 'wrong-id-type':
      return hits ? { ...result, hits: hits.map((h, i) => ({ ...h, id: i % 2 ? true : { bad: h.id } })) } : result;
    case 'nan-score':
      if (hits?.length) return { ...result, hits: hits.map((h, i) => (i === 0 ? { ...h, score: NAN_SENTINEL } : h)) };
      if (result.scores?.length) return { ...result, scores: [NAN_SENTINEL, ...result.scores.slice(1)] };
      return result;
    case 'huge': {
      if (!hits?.length) return result;
      const pad = ' lorem'.repeat(Math.ceil(opts.hugeBytes / 6));
      return { ...result, hits: [{ ...hits[0], text: (hits[0].text ?? '') + pad.slice(0, opts.hugeBytes) }, ...hits.slice(1)] };
    }
    default:
      return result;
  }
}
const serialize = (frame) => JSON.stringify(frame).replace(`"${NAN_SENTINEL}"`, '1e400');

// -------------------------------------------------------------- execution --
/** In-flight requests by JSON id (§7.14): key → {ac, cancelled, hung, method, id}. */
const inflight = new Map();
const keyOf = (id) => JSON.stringify(id);
const abortable = (ms, signal) =>
  new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const t = ms === Infinity ? null : delay(resolve, ms);
    signal.addEventListener(
      'abort',
      () => {
        if (t) clearTimeout(t);
        reject(signal.reason);
      },
      { once: true },
    );
  });

function onCancel(params) {
  // §7.14: unknown/answered ids are ignored
  const id = isObj(params) ? params.id : undefined;
  const entry = inflight.get(keyOf(id));
  event({ ev: 'cancel', id, known: Boolean(entry) });
  if (entry && !entry.cancelled) {
    entry.cancelled = true;
    entry.ac.abort(new Error('cancelled'));
  }
}

/**
 * Validate + run one request. `ctx`: {session, transport, headers?, notify(frame), signal?,
 * progressOk?, onHung?, onShutdown?}.
 * Returns an outcome: {kind:'frame', frame, headers?} | {kind:'garbage'|'half'|'unknown-id', frame} | {kind:'none'}.
 */
async function runRequest(msg, ctx) {
  if (!isObj(msg) || msg.jsonrpc !== '2.0' || typeof msg.method !== 'string' || !isId(msg.id)) {
    return { kind: 'frame', frame: errFrame(isObj(msg) && isId(msg.id) ? msg.id : null, -32600, 'Invalid Request') };
  }
  const { id, method } = msg;
  const params = msg.params === undefined ? {} : msg.params;
  event({ ev: 'request', method, id, params, ...(ctx.headers ? { headers: ctx.headers } : {}) });
  const opts = currentOpts();
  const entry = { id, method, ac: new AbortController(), cancelled: false, hung: false };
  if (ctx.signal) ctx.signal.addEventListener('abort', () => entry.ac.abort(new Error('aborted')), { once: true });
  inflight.set(keyOf(id), entry);
  const signal = entry.ac.signal;
  try {
    if (!isObj(params)) throw invalid('params', 'params must be an object');
    // §13: before a successful initialize only info/ping/shutdown are allowed (stdio is stateful).
    if (!ctx.session.initialized && !LIFECYCLE.has(method)) throw new RpcError(-32001, 'not initialized');
    // §7 / §12: undefined method → -32004; defined but unadvertised → -32003.
    if (!Object.hasOwn(METHODS, method)) throw new RpcError(-32004, `unknown method ${method}`);
    const gate = METHODS[method];
    if (gate && !Object.hasOwn(CAPS, gate)) throw new RpcError(-32003, `capability ${gate} not advertised`, { detail: method });

    const mode = faultFor(method, opts);
    if (mode === 'crash') {
      event({ ev: 'crash', id, method });
      process.exit(1);
    }
    if (mode === 'rate-limit') {
      throw Object.assign(new RpcError(-32011, 'rate limited', { retryable: true, retryAfterMs: opts.retryAfterMs }), { retryAfter: true });
    }
    if (mode === 'cancelled') throw new RpcError(-32006, 'cancelled');
    if (mode === 'fail' && faultRng() < opts.failRate)
      throw new RpcError(opts.failCode, 'injected failure', { detail: 'test-engine fault' });

    // §9: progress only when streaming is advertised and the request carried a token.
    const token = isObj(params._meta) ? params._meta.progressToken : undefined;
    if (CAPS.streaming && (typeof token === 'string' || Number.isInteger(token)) && !LIFECYCLE.has(method) && ctx.progressOk !== false) {
      const n = opts.progressFrames;
      for (let i = 0; i < n; i++) {
        if (i > 0 && opts.progressIntervalMs > 0) await abortable(opts.progressIntervalMs, signal);
        ctx.notify({
          jsonrpc: '2.0',
          method: 'notifications/progress',
          params: {
            progressToken: token,
            progress: Math.floor(((i + 1) / n) * 100) / 100,
            stage: 'recall',
            message: `${method} ${i + 1}/${n}`,
          },
        });
      }
    }
    if (mode === 'hang') {
      entry.hung = true;
      ctx.onHung?.();
      await abortable(Infinity, signal);
    }
    if (mode === 'slow') await abortable(opts.delayMs, signal);
    if (opts.tailRate > 0 && !LIFECYCLE.has(method) && tailRng() < opts.tailRate) await abortable(opts.tailDelayMs, signal);
    if (signal.aborted) throw signal.reason;

    let result = dispatch(method, params, ctx.session, opts);
    if (method === 'shutdown') ctx.onShutdown?.();
    // §17.1: logs only if advertised AND the client opted in at initialize (stdio only).
    if (method === 'retrieve' && CAPS.log && ctx.session.clientCaps?.log && ctx.transport === 'stdio') {
      ctx.notify({ jsonrpc: '2.0', method: 'notifications/log', params: { level: 'info', message: 'retrieve served', logger: ENGINE } });
    }
    result = corrupt(mode, result, Number.isInteger(params.k) ? params.k : 10, opts);
    const frame = { jsonrpc: '2.0', id, result };
    if (mode === 'garbage' || mode === 'close-mid-answer' || mode === 'unknown-id') {
      return { kind: mode === 'close-mid-answer' ? 'half' : mode, frame, mode };
    }
    return { kind: 'frame', frame, mode };
  } catch (e) {
    if (entry.cancelled) return { kind: 'frame', frame: errFrame(id, -32006, 'Cancelled') };
    if (signal.aborted) return { kind: 'none' }; // HTTP client went away
    if (e instanceof RpcError) {
      const headers = e.retryAfter ? { 'retry-after': String(Math.ceil(opts.retryAfterMs / 1000)) } : undefined;
      return { kind: 'frame', frame: errFrame(id, e.code, e.message, e.data), headers };
    }
    diag('internal error:', e?.stack ?? e);
    return { kind: 'frame', frame: errFrame(id, -32603, 'Internal error', { detail: String(e?.message ?? e) }) };
  } finally {
    if (inflight.get(keyOf(id)) === entry) inflight.delete(keyOf(id));
  }
}

function recordOutcome(out) {
  if (out.kind === 'none') return;
  const f = out.frame;
  const id = out.kind === 'unknown-id' ? undefined : f.id;
  event({ ev: 'response', id, ...(f.error ? { code: f.error.code } : {}), ...(out.kind !== 'frame' ? { fault: out.kind } : {}) });
}
/** §11 batches: members concurrently; raw faults degrade to plain frames inside a batch. */
async function runBatch(arr, ctx) {
  if (arr.length === 0) return errFrame(null, -32600, 'Invalid Request: empty batch');
  const outs = await Promise.all(
    arr.map(async (m) => {
      if (isObj(m) && typeof m.method === 'string' && m.id === undefined) {
        onNotification(m, ctx.headers);
        return null;
      }
      const out = await runRequest(m, ctx);
      recordOutcome(out);
      return out.kind === 'none' ? null : out.frame;
    }),
  );
  const frames = outs.filter(Boolean);
  return frames.length ? frames : null;
}
function onNotification(msg, headers) {
  // §4.5: never answered; unknown notifications/* ignored
  if (msg.method === 'notifications/cancel') onCancel(msg.params);
  else event({ ev: 'notification', method: msg.method, params: msg.params, ...(headers ? { headers } : {}) });
}

// ------------------------------------------------------------------ stdio --
function startStdio() {
  // §5.1
  const session = { initialized: false, clientCaps: null, stateless: false };
  let closing = false,
    stopped = false,
    exiting = false;
  const active = new Set();
  const out = (text) => process.stdout.write(text + '\n');
  const flushAndExit = (code) => {
    if (exiting) return;
    exiting = true;
    process.stdout.write('', () => process.exit(code));
  };
  const maybeFinish = () => {
    if (closing && [...active].every((e) => e.hung)) flushAndExit(0);
  };
  process.stdout.on('error', () => process.exit(0)); // EPIPE: peer went away
  event({ ev: 'start', pid: process.pid, transport: 'stdio' });

  const handle = (msg) => {
    if (Array.isArray(msg)) {
      const e = { hung: false };
      active.add(e);
      runBatch(msg, ctxFor(e)).then((r) => {
        if (r) out(serialize(r));
        active.delete(e);
        maybeFinish();
      });
      return;
    }
    if (isObj(msg) && typeof msg.method === 'string' && msg.id === undefined) return onNotification(msg);
    const e = { hung: false };
    active.add(e);
    runRequest(msg, ctxFor(e)).then((o) => {
      if (o.kind === 'frame') out(serialize(o.frame));
      else if (o.kind === 'garbage') out('{"jsonrpc":"2.0", this is not json');
      else if (o.kind === 'unknown-id') out(serialize({ ...o.frame, id: `unknown-${o.frame.id}` }));
      else if (o.kind === 'half') {
        const text = serialize(o.frame);
        recordOutcome(o);
        process.stdout.write(text.slice(0, Math.floor(text.length / 2)), () => process.exit(1));
        return;
      }
      recordOutcome(o);
      active.delete(e);
      maybeFinish();
    });
  };
  const ctxFor = (e) => ({
    session,
    transport: 'stdio',
    notify: (f) => out(serialize(f)),
    onHung: () => {
      e.hung = true;
      maybeFinish();
    },
    onShutdown: () => {
      stopped = true;
      closing = true;
    },
  });

  let buf = '';
  process.stdin.setEncoding('utf8');
  process.stdin.on('data', (chunk) => {
    buf += chunk;
    let nl;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, nl).replace(/\r$/, '');
      buf = buf.slice(nl + 1);
      if (!line.trim() || stopped) continue; // §5.1 blank lines; §13.1 nothing after shutdown
      let msg;
      try {
        msg = JSON.parse(line);
      } catch {
        out(JSON.stringify(errFrame(null, -32700, 'Parse error')));
        continue;
      }
      handle(msg);
    }
  });
  process.stdin.on('end', () => {
    closing = true;
    maybeFinish();
  }); // EOF ≡ shutdown
}

// ------------------------------------------------------------------- http --
/** --single-session: the one session of this process (reference SDK HTTP servers keep one). */
const SHARED_SESSION = { initialized: false, clientCaps: {}, stateless: false };

function startHttp() {
  // §5.2 — stateless, implicitly initialized
  const server = http.createServer((req, res) => {
    handleHttp(req, res).catch((e) => {
      diag('http handler error:', e?.stack ?? e);
      if (!res.headersSent) {
        res.writeHead(500);
        res.end();
      } else res.destroy();
    });
  });
  server.listen(OPTS.port, OPTS.host, () => {
    const port = server.address().port;
    event({ ev: 'start', pid: process.pid, transport: 'http', port });
    process.stdout.write(JSON.stringify({ listening: port }) + '\n');
  });
}

function sendJson(res, status, body, headers = {}) {
  const text = typeof body === 'string' ? body : serialize(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

async function handleHttp(req, res) {
  const url = new URL(req.url ?? '/', 'http://localhost');
  if (url.pathname !== '/rcp' && !url.pathname.startsWith('/rcp/')) return sendJson(res, 404, { error: 'not an RCP endpoint' });
  if (req.method === 'OPTIONS') {
    res.writeHead(204, { allow: 'POST' });
    return res.end();
  }
  if (req.method !== 'POST') {
    res.writeHead(405, { allow: 'POST' });
    return res.end();
  }
  const pathMethod = url.pathname.length > 5 ? decodeURIComponent(url.pathname.slice(5)) : null;
  const chunks = [];
  for await (const c of req) chunks.push(c);
  const body = Buffer.concat(chunks).toString('utf8');
  const headers = req.headers;

  let msg;
  try {
    msg = JSON.parse(body);
  } catch {
    return sendJson(res, 200, errFrame(null, -32700, 'Parse error'));
  }
  const session = OPTS.singleSession ? SHARED_SESSION : { initialized: true, clientCaps: {}, stateless: true };
  if (Array.isArray(msg)) {
    const r = await runBatch(msg, { session, transport: 'http', headers, notify: () => {}, progressOk: false });
    if (!r) {
      res.writeHead(202, { 'content-length': 0 });
      return res.end();
    }
    return sendJson(res, 200, r);
  }
  if (isObj(msg) && typeof msg.method === 'string' && msg.id === undefined) {
    onNotification(msg, headers);
    res.writeHead(202, { 'content-length': 0 });
    return res.end();
  }
  if (pathMethod !== null && isObj(msg) && msg.method !== pathMethod) {
    // §5.2 path/body mismatch
    return sendJson(res, 200, errFrame(isId(msg.id) ? msg.id : null, -32600, 'method in path does not match body'));
  }

  // Client abort detection: the response closed before we finished it.
  const ac = new AbortController();
  let selfKill = false;
  res.on('close', () => {
    if (!res.writableFinished && !selfKill) {
      event({ ev: 'abort', id: isObj(msg) ? msg.id : undefined, method: isObj(msg) ? msg.method : undefined });
      ac.abort();
    }
  });
  const token = isObj(msg) && isObj(msg.params) && isObj(msg.params._meta) ? msg.params._meta.progressToken : undefined;
  const wantsSse = /text\/event-stream/.test(String(headers.accept ?? '')) && token !== undefined && Boolean(CAPS.streaming);
  let sseStarted = false;
  const sseRaw = (chunk, extra = {}, cb = undefined) => {
    if (!sseStarted) {
      sseStarted = true;
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', ...extra });
      res.write(': rcp test-engine stream\n\n');
    }
    res.write(chunk, cb);
  };
  const sse = (text, extra) => sseRaw(`data: ${text}\n\n`, extra);
  const notify = wantsSse
    ? (f) => {
        if (!res.destroyed) sse(serialize(f));
      }
    : () => {};
  const out = await runRequest(msg, { session, transport: 'http', headers, notify, signal: ac.signal, progressOk: wantsSse });
  if (out.kind === 'none' || res.destroyed) return;
  recordOutcome(out);
  const text =
    out.kind === 'garbage'
      ? '{"jsonrpc":"2.0", this is not json'
      : serialize(out.kind === 'unknown-id' ? { ...out.frame, id: `unknown-${out.frame.id}` } : out.frame);
  if (out.kind === 'half') {
    // headers + half the body, then kill the socket once flushed
    const half = text.slice(0, Math.floor(text.length / 2));
    const kill = () => {
      selfKill = true;
      res.socket?.destroy();
    };
    if (wantsSse) return sseRaw(`data: ${half}`, {}, kill);
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
    return res.write(half, kill);
  }
  if (wantsSse) {
    sse(text, out.headers ?? {});
    res.end();
  } else sendJson(res, 200, text, out.headers ?? {});
}

// ------------------------------------------------------------------- main --
if (OPTS.transport === 'http') startHttp();
else if (OPTS.transport === 'stdio') startStdio();
else {
  diag(`unknown --transport ${OPTS.transport}`);
  process.exit(2);
}
