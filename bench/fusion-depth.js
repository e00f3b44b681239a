#!/usr/bin/env node
/**
 * The fusion depth on Cranfield (spec §16.3, Appendix F): each engine is asked for D hits
 * whatever the request's k (gateway.fusionDepth), so the fused top 10 depends on D only. This
 * sweeps D over the two demo engines of the default config (BM25 over titles, BM25 over
 * abstracts) with the gateway's own pure `fuse()` and reports nDCG@10, Recall@D-bounded and MRR
 * of the fused top 10 per strategy, and the cost: upstream hits fetched per request (engines × D).
 *
 *   npm run build && node bench/fusion-depth.js [--depths 10,20,30,50,100,200]
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const dist = (rel) => import(pathToFileURL(path.join(ROOT, 'dist', rel)).href);
if (!existsSync(path.join(ROOT, 'dist/core/federation/fusion/fuse.js'))) {
  process.stderr.write('fusion-depth: dist/ is missing; run `npm run build` first\n');
  process.exit(2);
}
const [{ createBm25Engine }, { fuse }, { loadCranfieldEval, evaluateRun }] = await Promise.all([
  dist('demo/bm25/index.js'),
  dist('core/federation/fusion/fuse.js'),
  dist('demo/eval/cranfield.js'),
]);

const { values } = parseArgs({ options: { depths: { type: 'string', default: '10,20,30,40,50,75,100,150,200' } } });
const depths = values.depths.split(',').map(Number);
const maxDepth = Math.max(...depths);
const engines = [
  { id: 'titles', engine: createBm25Engine('title'), scoreFloor: 0 },
  { id: 'abstracts', engine: createBm25Engine('body'), scoreFloor: 0 },
];
const evalSet = loadCranfieldEval();
const perQuery = evalSet.queries.map((q) => ({
  id: q.id,
  lists: engines.map(({ id, engine, scoreFloor }) => ({ engine: id, scoreFloor, weight: 1, hits: engine.search(q.text, maxDepth).hits })),
}));

function run(strategy, depth) {
  const out = new Map();
  for (const q of perQuery) {
    const lists = q.lists.map((l) => ({ ...l, hits: l.hits.slice(0, depth) }));
    out.set(
      q.id,
      fuse(lists, strategy, { k: 10, rrfK: 60, dedup: 'id' }).hits.map((h) => String(h.id)),
    );
  }
  return evaluateRun(out, evalSet.judgements);
}

const rows = [['depth D', 'upstream hits / request', 'rrf nDCG@10', 'rrf MRR', 'weighted nDCG@10', 'convex nDCG@10']];
for (const depth of depths) {
  const rrf = run('rrf', depth);
  rows.push([
    String(depth),
    String(depth * engines.length),
    rrf.ndcg10.toFixed(4),
    rrf.mrr.toFixed(4),
    run('weighted', depth).ndcg10.toFixed(4),
    run('convex', depth).ndcg10.toFixed(4),
  ]);
}
const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
const line = (r) => `| ${r.map((c, i) => c.padEnd(widths[i])).join(' | ')} |`;
process.stdout.write(
  [line(rows[0]), `| ${widths.map((w) => '-'.repeat(w)).join(' | ')} |`, ...rows.slice(1).map(line)].join('\n') +
    `\n\n${evalSet.queries.length} Cranfield queries; the fused top 10 of two engines, each asked for D hits.\n`,
);
