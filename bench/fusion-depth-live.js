#!/usr/bin/env node
/**
 * The fusion depth through a live gateway over the default config (config/default.json: BM25
 * over titles, BM25 over abstracts, SQLite FTS5 over the full text): for each depth D, a gateway
 * with `gateway.fusionDepth: D` answers all 225 Cranfield queries with k = 10, and the fused top 10
 * is scored (nDCG@10, MRR). Upstream cost: engines × D hits per request.
 *
 *   npm run build && node bench/fusion-depth-live.js [--depths 10,20,30,50,100]
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { fetch } from 'undici';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const { loadCranfieldEval, evaluateRun } = await import(pathToFileURL(path.join(ROOT, 'dist/demo/eval/cranfield.js')).href);
const { values } = parseArgs({ options: { depths: { type: 'string', default: '10,20,30,50,100' } } });
const depths = values.depths.split(',').map(Number);
const base = JSON.parse(readFileSync(path.join(ROOT, 'config/default.json'), 'utf8'));
const { queries } = loadCranfieldEval();
const dir = mkdtempSync(path.join(os.tmpdir(), 'fusion-depth-live-'));

/** The default config with absolute paths (it is written elsewhere) and this depth. */
function configFor(depth) {
  const engines = base.engines.map((engine) => {
    if (engine.command)
      return { ...engine, command: engine.command.map((part) => (part.startsWith('../') ? path.join(ROOT, part.slice(3)) : part)) };
    return { ...engine, adapter: { ...engine.adapter, path: path.join(ROOT, '.cache/cranfield-fts5.db') } };
  });
  const file = path.join(dir, `depth-${depth}.json`);
  writeFileSync(file, JSON.stringify({ engines, gateway: { ...base.gateway, port: 0, logLevel: 'warn', fusionDepth: depth } }));
  return file;
}

async function startGateway(file) {
  const child = spawn(process.execPath, [path.join(ROOT, 'dist/cli/main.js'), 'serve', '--config', file, '--port', '0'], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let err = '';
  const url = await new Promise((resolve, reject) => {
    child.stderr.on('data', (chunk) => {
      err += chunk;
      const m = /listening on (http:\/\/\S+)/.exec(err);
      if (m) resolve(m[1]);
    });
    child.once('exit', (code) => reject(new Error(`gateway exited ${code}: ${err.slice(-500)}`)));
  });
  return { url, child };
}

async function rpc(url, method, params) {
  const res = await fetch(`${url}/${method}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  return (await res.json()).result;
}

const rows = [];
for (const depth of depths) {
  const { url, child } = await startGateway(configFor(depth));
  try {
    for (let ready = false; !ready;) {
      const listed = await rpc(url, 'catalog/list', {});
      ready = listed.engines.every((engine) => engine._meta.status === 'ready');
      if (!ready) await new Promise((r) => setTimeout(r, 200));
    }
    const run = new Map();
    for (let i = 0; i < queries.length; i += 8) {
      await Promise.all(
        queries.slice(i, i + 8).map(async (q) =>
          run.set(
            q.id,
            (await rpc(url, 'retrieve', { query: q.text, k: 10 })).hits.map((h) => String(h.id)),
          ),
        ),
      );
    }
    const e = evaluateRun(run);
    rows.push(`| ${depth} | ${depth * base.engines.length} | ${e.ndcg10.toFixed(4)} | ${e.mrr.toFixed(4)} |`);
    process.stderr.write(`depth ${depth}: nDCG@10 ${e.ndcg10.toFixed(4)}\n`);
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
  }
}
rmSync(dir, { recursive: true, force: true });
process.stdout.write(
  ['| depth D | upstream hits / request | nDCG@10 | MRR@10 |', '| --- | --- | --- | --- |', ...rows].join('\n') +
    `\n\n${queries.length} Cranfield queries, k = 10, RRF (rrfK 60), the default config's ${base.engines.length} engines.\n`,
);
