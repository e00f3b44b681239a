#!/usr/bin/env node
/**
 * Scenario D, the ceiling: the least a federating gateway can do per query, written by hand with
 * node:http and undici — parse the request, ask every engine (one undici Pool each, the same
 * connection count as the gateway's default), parse each answer, fuse by RRF, write one answer.
 * No framework, no validation, no metrics, no breakers, no deadlines, no progress.
 *
 *   node bench/lib/bare.js --engines http://127.0.0.1:P1/rcp,http://127.0.0.1:P2/rcp [--connections 64]
 *
 * Reports `{type:'listening', url}` over IPC (or prints `{"listening":"url"}` without IPC).
 */
import http from 'node:http';
import { parseArgs } from 'node:util';
import { Pool } from 'undici';

const { values } = parseArgs({
  options: {
    engines: { type: 'string' },
    connections: { type: 'string', default: '64' },
    host: { type: 'string', default: '127.0.0.1' },
  },
});
const RRF_K = 60;
const HEADROOM = 2;
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

async function ask(engine, query, k) {
  const { body } = await engine.pool.request({
    path: engine.path,
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: nextId++, method: 'retrieve', params: { query, k } }),
  });
  const answer = await body.json();
  return answer.result.hits;
}

function rrf(lists, k) {
  const fused = new Map();
  lists.forEach((hits, e) => {
    for (let rank = 0; rank < hits.length; rank++) {
      const hit = hits[rank];
      const entry = fused.get(hit.id);
      const score = 1 / (RRF_K + rank + 1);
      if (entry) entry.score += score;
      else fused.set(hit.id, { hit, score, engine: engines[e].name, rank: rank + 1 });
    }
  });
  return [...fused.values()]
    .sort((a, b) => b.score - a.score)
    .slice(0, k)
    .map((entry) => ({ ...entry.hit, score: entry.score, meta: { engine: entry.engine, engineRank: entry.rank } }));
}

const server = http.createServer({ keepAliveTimeout: 60_000 }, (req, res) => {
  const chunks = [];
  req.on('data', (chunk) => chunks.push(chunk));
  req.on('end', () => {
    const request = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    const k = request.params.k ?? 10;
    Promise.all(engines.map((engine) => ask(engine, request.params.query, k * HEADROOM))).then(
      (lists) => {
        const out = JSON.stringify({ jsonrpc: '2.0', id: request.id, result: { hits: rrf(lists, k) } });
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(out) });
        res.end(out);
      },
      (err) => {
        res.writeHead(502).end(String(err));
      },
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
