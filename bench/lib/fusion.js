/**
 * Fusion microbenchmark: RRF over `engines` ranked lists of `hits` hits each (the gateway's own
 * `fuse` from dist/) against `JSON.parse` of the same hits as the engines would send them, in
 * this process, interleaved in batches so both see the same machine state.
 */
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { ROOT } from './procs.js';

function lists(engines, hits) {
  const out = [];
  for (let e = 0; e < engines; e++) {
    const list = [];
    for (let i = 0; i < hits; i++) {
      // 7 is coprime with the 3,000-document pool: ids are unique per list and overlap across lists.
      const doc = (i * 7 + e * 131) % 3000;
      list.push({
        id: `doc-${doc}`,
        score: Number((100 - i * 0.05).toFixed(3)),
        text: `Document ${doc}: reciprocal rank fusion merges ranked lists from several retrieval engines into one list.`,
        citation: { uri: `bench://corpus/doc-${doc}` },
      });
    }
    out.push(list);
  }
  return out;
}

/** Median per-call milliseconds of `fn`, measured in batches of at least `batchMs`. */
function timeBatch(fn, batchMs) {
  let n = 0;
  const start = performance.now();
  let now = start;
  do {
    fn();
    n++;
    now = performance.now();
  } while (now - start < batchMs);
  return (now - start) / n;
}

export async function fusionBench({ engines = 5, hits = 1000, k = 100, totalMs = 3000, distDir = path.join(ROOT, 'dist') } = {}) {
  const { fuse } = await import(pathToFileURL(path.join(distDir, 'core/federation/fusion/fuse.js')).href);
  const texts = lists(engines, hits).map((list) => JSON.stringify(list));
  const parse = () => texts.map((text) => JSON.parse(text));
  const parsed = parse().map((list, e) => ({ engine: `e${e}`, weight: 1, hits: list }));
  let sink = 0;
  const fusion = () => {
    sink += fuse(parsed, 'rrf', { k, rrfK: 60, dedup: 'id' }).hits.length;
  };
  const parsing = () => {
    sink += parse().length;
  };
  // Warm both paths up (JIT), then interleave batches and keep the medians.
  timeBatch(fusion, Math.min(200, totalMs / 10));
  timeBatch(parsing, Math.min(200, totalMs / 10));
  const batchMs = Math.max(10, totalMs / 20);
  const fuseTimes = [];
  const parseTimes = [];
  for (let i = 0; i < 10; i++) {
    fuseTimes.push(timeBatch(fusion, batchMs));
    parseTimes.push(timeBatch(parsing, batchMs));
  }
  const median = (xs) => xs.sort((a, b) => a - b)[xs.length >> 1];
  if (sink === 0) throw new Error('fusion produced nothing');
  const fuseMs = median(fuseTimes);
  const parseMs = median(parseTimes);
  return { engines, hits, k, fuseMs, parseMs, ratio: fuseMs / parseMs };
}
