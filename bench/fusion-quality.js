#!/usr/bin/env node
/**
 * Fusion quality on Cranfield (spec §16.3, Appendix F): RRF vs weighted (per-engine min-max) vs
 * convex (min anchored at the advertised scoreFloor) over the two demo engines the default
 * config federates (BM25 over titles, BM25 over abstracts), with the gateway's own pure `fuse()`.
 * In-process: the engines and the fusion are the code the gateway runs, minus the wire.
 *
 *   npm run build && node bench/fusion-quality.js [--depth 100] [--no-append] [--results FILE]
 *
 * Prints nDCG@10, Recall@100 and MRR per strategy (and per engine alone, for reference), the
 * paired per-query comparison against RRF (wins/losses on nDCG@10 and a two-sided sign-flip
 * permutation p-value), a sweep of the weight on the abstracts engine (α) and of rrfK, and
 * appends the figures to bench/RESULTS.md under "Fusion quality".
 */
import { appendFileSync, existsSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const dist = (rel) => import(pathToFileURL(path.join(ROOT, 'dist', rel)).href);
if (!existsSync(path.join(ROOT, 'dist/core/federation/fusion/fuse.js'))) {
  process.stderr.write('fusion-quality: dist/ is missing; run `npm run build` first\n');
  process.exit(2);
}
const [{ createBm25Engine }, { fuse }, { loadCranfieldEval, evaluateRun }] = await Promise.all([
  dist('demo/bm25/index.js'),
  dist('core/federation/fusion/fuse.js'),
  dist('demo/eval/cranfield.js'),
]);

const { values } = parseArgs({
  options: {
    depth: { type: 'string', default: '100' },
    'no-append': { type: 'boolean', default: false },
    results: { type: 'string', default: path.join(ROOT, 'bench/RESULTS.md') },
  },
});
const DEPTH = Number(values.depth);
const K = 100; // fused list length: Recall@100 needs 100 ranks

// The two engines of config/default.json, with their advertised scoreFloor (§6.1: BM25 ≥ 0).
const engines = [
  { id: 'titles', engine: createBm25Engine('title'), scoreFloor: 0 },
  { id: 'abstracts', engine: createBm25Engine('body'), scoreFloor: 0 },
];
const evalSet = loadCranfieldEval();

/** Each engine's ranked list per query, computed once. */
const perQuery = evalSet.queries.map((q) => ({
  id: q.id,
  lists: engines.map(({ id, engine, scoreFloor }) => ({ engine: id, scoreFloor, hits: engine.search(q.text, DEPTH).hits })),
}));

function run(strategy, { weights = {}, rrfK = 60, depth = DEPTH, k = K } = {}) {
  const out = new Map();
  for (const q of perQuery) {
    const lists = q.lists.map((l) => ({ ...l, hits: l.hits.slice(0, depth), weight: weights[l.engine] ?? 1 }));
    out.set(
      q.id,
      fuse(lists, strategy, { k, rrfK, dedup: 'id' }).hits.map((h) => String(h.id)),
    );
  }
  return evaluateRun(out, evalSet.judgements);
}

function single(engineId) {
  const out = new Map();
  for (const q of perQuery)
    out.set(
      q.id,
      q.lists
        .find((l) => l.engine === engineId)
        .hits.slice(0, K)
        .map((h) => h.id),
    );
  return evaluateRun(out, evalSet.judgements);
}

/** Seeded PRNG (mulberry32) so the p-values are reproducible. */
function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Paired comparison of nDCG@10 against a baseline: wins, losses, ties, two-sided permutation p. */
function paired(evaluation, baseline, iterations = 20_000) {
  const diffs = [];
  for (const [qid, scores] of evaluation.perQuery) diffs.push(scores.ndcg10 - baseline.perQuery.get(qid).ndcg10);
  const eps = 1e-12;
  const wins = diffs.filter((d) => d > eps).length;
  const losses = diffs.filter((d) => d < -eps).length;
  const observed = Math.abs(diffs.reduce((a, b) => a + b, 0));
  const random = rng(20240601);
  let extreme = 0;
  for (let i = 0; i < iterations; i++) {
    let sum = 0;
    for (const d of diffs) sum += random() < 0.5 ? d : -d;
    if (Math.abs(sum) >= observed - eps) extreme++;
  }
  return { wins, losses, ties: diffs.length - wins - losses, p: (extreme + 1) / (iterations + 1) };
}

const f3 = (x) => x.toFixed(4);
const rows = [];
const rrf = run('rrf');
const strategies = [
  ['titles alone (BM25)', single('titles')],
  ['abstracts alone (BM25)', single('abstracts')],
  ['rrf (rrfK 60)', rrf],
  ['weighted (min-max)', run('weighted')],
  ['convex (scoreFloor 0)', run('convex')],
];
for (const [name, e] of strategies) {
  const cmp = e === rrf ? undefined : paired(e, rrf);
  rows.push([
    name,
    f3(e.ndcg10),
    f3(e.recall100),
    f3(e.mrr),
    cmp ? `${cmp.wins}/${cmp.losses}/${cmp.ties}` : '—',
    cmp ? (cmp.p < 1e-4 ? '< 0.0001' : cmp.p.toFixed(4)) : '—',
  ]);
}

// What a gateway request with k = 10 does by default: each engine asked for k × fusionHeadroom
// (2) = 20 hits. Min-max normalises over those 20, so its figures move with the depth; convex
// anchors the low end at the floor and does not.
const GATEWAY_DEPTH = 20;
const atGateway = ['rrf', 'weighted', 'convex'].map((strategy) => {
  const e = run(strategy, { depth: GATEWAY_DEPTH, k: 10 });
  return [strategy, f3(e.ndcg10), f3(e.mrr)];
});

// Sensitivity (on the evaluation queries themselves: a sweep, not a held-out tuning).
const sweep = [];
for (const alpha of [0.3, 0.5, 0.7, 0.8]) {
  const weights = { titles: 1 - alpha, abstracts: alpha };
  sweep.push([
    `α = ${alpha} on abstracts`,
    f3(run('weighted', { weights }).ndcg10),
    f3(run('convex', { weights }).ndcg10),
    f3(run('rrf', { weights }).ndcg10),
  ]);
}
const rrfKs = [10, 30, 60, 100].map((rrfK) => [`rrfK ${rrfK}`, f3(run('rrf', { rrfK }).ndcg10)]);

const table = (head, body) => {
  const all = [head, ...body];
  const widths = head.map((_, i) => Math.max(...all.map((r) => String(r[i]).length)));
  return all
    .map(
      (r, n) =>
        `| ${r.map((c, i) => String(c).padEnd(widths[i])).join(' | ')} |${n === 0 ? `\n| ${widths.map((w) => '-'.repeat(w)).join(' | ')} |` : ''}`,
    )
    .join('\n');
};
const main = table(['run', 'nDCG@10', 'Recall@100', 'MRR', 'vs rrf W/L/T (nDCG@10)', 'p (paired)'], rows);
const alphaTable = table(['weights (titles = 1 − α)', 'weighted nDCG@10', 'convex nDCG@10', 'rrf nDCG@10'], sweep);
const rrfKTable = table(['rrf constant', 'nDCG@10'], rrfKs);
const gatewayTable = table([`strategy (${GATEWAY_DEPTH} hits per engine, k 10)`, 'nDCG@10', 'MRR (top 10)'], atGateway);
const cpu = os.cpus()[0]?.model.trim() ?? 'unknown';
const text = `## Fusion quality — ${new Date().toISOString().replace(/\.\d+Z$/, 'Z')}

Cranfield (1,400 docs, ${rrf.queries} judged queries), the two demo engines of config/default.json
(BM25 over titles, BM25 over abstracts), each asked for ${DEPTH} hits, fused to ${K} with the
gateway's \`fuse()\` (dedup by id, equal engine weights); \`node bench/fusion-quality.js\`
(${process.version}, ${cpu}). W/L/T: queries where nDCG@10 beat / lost to / tied RRF;
p: two-sided paired sign-flip permutation test (20,000 draws).

${main}

At the gateway's default depth for \`k: 10\` (each engine asked for 20 hits):

${gatewayTable}

Sensitivity (swept on the same queries, so not a tuned result):

${alphaTable}

${rrfKTable}
`;
process.stdout.write(`${text}\n`);
if (!values['no-append']) {
  if (!existsSync(values.results)) writeFileSync(values.results, '# Benchmark results\n\n');
  appendFileSync(values.results, `\n${text}`);
  process.stdout.write(`appended to ${path.relative(process.cwd(), values.results)}\n`);
}
