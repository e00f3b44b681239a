import { beforeAll, describe, expect, it } from 'vitest';
import { BM25_VIEWS, createBm25Engine, type Bm25Engine, type Bm25View } from '../../src/demo/bm25/index.js';
import { findCranfieldDir, loadCranfieldDocs, type CranDoc } from '../../src/demo/bm25/corpus.js';
import { evaluateRun, loadCranfieldEval } from '../../src/demo/eval/cranfield.js';

const engines = new Map<Bm25View, Bm25Engine>();
const { queries } = loadCranfieldEval();

beforeAll(() => {
  loadCranfieldDocs(); // JSON parse outside the timed build
  for (const view of BM25_VIEWS) engines.set(view, createBm25Engine(view));
});
const engine = (view: Bm25View): Bm25Engine => {
  const e = engines.get(view);
  if (!e) throw new Error(`no engine ${view}`);
  return e;
};

describe('corpus', () => {
  it('finds data/cranfield by walking up from the module and stringifies ids', () => {
    expect(findCranfieldDir()).toMatch(/[/\\]data[/\\]cranfield$/);
    const docs = loadCranfieldDocs();
    expect(docs).toHaveLength(1400);
    expect(docs[0].id).toBe('1');
    expect(docs[0].title).toBe('experimental investigation of the aerodynamics of a wing in a slipstream .');
    expect(docs[0].author).toBe('brenckman,m.');
    expect(docs.every((d) => typeof d.id === 'string')).toBe(true);
    expect(loadCranfieldDocs()).toBe(docs); // cached
  });
  it('fails precisely when there is no data directory above the start', () => {
    expect(() => findCranfieldDir('/')).toThrow(/Cranfield data not found/);
  });
});

describe.each(BM25_VIEWS)('BM25 engine, view %s', (view) => {
  it('indexes all 1,400 docs and advertises a BM25 floor of 0', () => {
    const e = engine(view);
    console.log(`[bm25:${view}] index build ${e.buildMs.toFixed(1)} ms for ${e.size} docs`);
    expect(e.size).toBe(1400);
    expect(e.scoreFloor).toBe(0);
    expect(e.scoreScale).toBe('bm25');
  });

  it('returns k hits with descending, finite, non-negative scores and the doc fields', () => {
    const { hits, total } = engine(view).search('supersonic flow over a flat plate', 10);
    expect(hits).toHaveLength(10);
    expect(total).toBeGreaterThan(10);
    const docs = new Map(loadCranfieldDocs().map((d) => [d.id, d] as const));
    for (let i = 0; i < hits.length; i++) {
      const h = hits[i];
      expect(Number.isFinite(h.score)).toBe(true);
      expect(h.score).toBeGreaterThan(0);
      if (i > 0) expect(h.score).toBeLessThanOrEqual(hits[i - 1].score);
      const doc = docs.get(h.id);
      expect(doc).toBeDefined();
      expect(h.text).toBe(doc?.body);
      expect(h.citation).toEqual({ source: `cranfield:${h.id}`, title: doc?.title });
      expect(h.meta).toEqual({ author: doc?.author, bibliography: doc?.bibliography });
    }
    expect(new Set(hits.map((h) => h.id)).size).toBe(10);
  });

  it('paginates with offset consistently and is deterministic', () => {
    const q = queries[0].text;
    const all = engine(view).search(q, 20);
    const page2 = engine(view).search(q, 10, { offset: 10 });
    expect(page2.hits).toEqual(all.hits.slice(10, 20));
    expect(page2.total).toBe(all.total);
    expect(engine(view).search(q, 20)).toEqual(all);
    expect(engine(view).search(q, 5, { offset: all.total }).hits).toEqual([]);
  });

  it('returns nothing for empty, stopword-only or unknown-word queries, and k = 0', () => {
    expect(engine(view).search('', 10)).toEqual({ hits: [], total: 0 });
    expect(engine(view).search('what is the of and', 10)).toEqual({ hits: [], total: 0 });
    expect(engine(view).search('zzqxv 漢字', 10)).toEqual({ hits: [], total: 0 });
    const zero = engine(view).search('wing', 0);
    expect(zero.hits).toEqual([]);
    expect(zero.total).toBeGreaterThan(0);
  });

  it('rejects a bad k or offset', () => {
    expect(() => engine(view).search('wing', -1)).toThrow(RangeError);
    expect(() => engine(view).search('wing', 1.5)).toThrow(RangeError);
    expect(() => engine(view).search('wing', Number.NaN)).toThrow(RangeError);
    expect(() => engine(view).search('wing', 5, { offset: -2 })).toThrow(RangeError);
  });
});

describe('views', () => {
  it('title and body rank differently for most queries', () => {
    let differentTop10 = 0;
    let differentTop1 = 0;
    for (const q of queries) {
      const t = engine('title')
        .search(q.text, 10)
        .hits.map((h) => h.id);
      const b = engine('body')
        .search(q.text, 10)
        .hits.map((h) => h.id);
      if (t.join() !== b.join()) differentTop10++;
      if (t[0] !== b[0]) differentTop1++;
    }
    console.log(`[bm25] title vs body: top-10 differs for ${differentTop10}/225 queries, top-1 for ${differentTop1}/225`);
    expect(differentTop10).toBeGreaterThan(200);
    expect(differentTop1).toBeGreaterThan(100);
  });

  it('only body-indexing views match a word that occurs in a body but in no title', () => {
    // 'destalling' occurs in the body of doc 1 only, never in a title.
    expect(engine('title').search('destalling', 5).total).toBe(0);
    expect(
      engine('body')
        .search('destalling', 5)
        .hits.map((h) => h.id),
    ).toContain('1');
  });

  it('body/all conflate inflections with Porter; title uses prefix matching instead', () => {
    // "oscillating" → Porter "oscil", which also matches "oscillations"/"oscillatory" in bodies.
    const body = engine('body').search('oscillating', 1400).total;
    const bodyExact = engine('body').search('oscillations', 1400).total;
    expect(body).toBe(bodyExact);
    expect(
      engine('title')
        .search('axisymmetric', 1400)
        .hits.some((h) => /axisymmetrical/.test(h.citation.title)),
    ).toBe(true);
  });
});

describe('retrieval quality over all 225 Cranfield queries', () => {
  it.each(BM25_VIEWS)('view %s: nDCG@10, Recall@100, MRR above sanity floors', (view) => {
    const run = new Map<string, string[]>();
    const started = performance.now();
    for (const q of queries)
      run.set(
        q.id,
        engine(view)
          .search(q.text, 100)
          .hits.map((h) => h.id),
      );
    const perQueryMs = (performance.now() - started) / queries.length;
    const r = evaluateRun(run);
    console.log(
      `[bm25:${view}] nDCG@10 ${r.ndcg10.toFixed(4)}  Recall@100 ${r.recall100.toFixed(4)}  MRR ${r.mrr.toFixed(4)}` +
        `  (${r.queries} queries, ${perQueryMs.toFixed(2)} ms/query)`,
    );
    expect(r.queries).toBe(225);
    expect(r.ndcg10).toBeGreaterThan(0.3);
    expect(r.recall100).toBeGreaterThan(0.5);
    expect(r.mrr).toBeGreaterThan(0.5);
  });
});

describe('custom documents and parameters', () => {
  const docs: CranDoc[] = [
    { id: '10', title: 'shock waves', body: 'shock wave reflection at a wall', author: 'x', bibliography: 'b1' },
    { id: '2', title: 'heat transfer', body: 'heat transfer in a laminar boundary layer with shock', author: 'y', bibliography: 'b2' },
    { id: '3', title: 'boundary layers', body: 'laminar boundary layer', author: 'z', bibliography: 'b3' },
  ];

  it('indexes the given docs; more matched terms rank higher', () => {
    const e = createBm25Engine('body', { docs, sourceName: 'test' });
    expect(e.size).toBe(3);
    const { hits, total } = e.search('laminar boundary layer heat', 3);
    expect(total).toBe(2);
    expect(hits.map((h) => h.id)).toEqual(['2', '3']);
    expect(hits[0].citation.source).toBe('test:2');
  });

  it('breaks score ties by the smaller id (code-unit order)', () => {
    const twins: CranDoc[] = ['b', 'a', 'c'].map((id) => ({ id, title: 't', body: 'same words', author: '', bibliography: '' }));
    expect(
      createBm25Engine('body', { docs: twins })
        .search('words', 3)
        .hits.map((h) => h.id),
    ).toEqual(['a', 'b', 'c']);
  });

  it('rejects BM25 parameters that could push a score below the advertised floor', () => {
    expect(() => createBm25Engine('body', { docs, bm25: { d: -1 } })).toThrow(RangeError);
    expect(() => createBm25Engine('body', { docs, bm25: { b: 1.5 } })).toThrow(RangeError);
    expect(() => createBm25Engine('nope' as Bm25View, { docs })).toThrow(RangeError);
    expect(() => createBm25Engine('toString' as Bm25View, { docs })).toThrow(RangeError);
  });
});
