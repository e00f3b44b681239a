/**
 * Fusion of per-engine ranked lists (§16.3): RRF, weighted min-max and convex, the
 * deterministic tie-break, dedup policies, merging of collapsed hits and the origin tags.
 */
import { describe, expect, it } from 'vitest';
import { dedupKey } from '../../src/core/federation/fusion/dedup.js';
import { fuse } from '../../src/core/federation/fusion/fuse.js';
import type { EngineHit, FusionOptions, RankedList } from '../../src/core/federation/fusion/types.js';

const opts = (over: Partial<FusionOptions> = {}): FusionOptions => ({ k: 10, rrfK: 60, dedup: 'id', ...over });
const list = (engine: string, hits: Array<Partial<EngineHit> & { id: string | number }>, extra: Partial<RankedList> = {}): RankedList => ({
  engine,
  weight: 1,
  ...extra,
  hits: hits.map((h, i) => ({ score: 100 - i, ...h })),
});
const ids = (hits: readonly EngineHit[]): Array<string | number> => hits.map((h) => h.id);
const meta = (hit: EngineHit | undefined): Record<string, unknown> => (hit?.meta ?? {}) as Record<string, unknown>;

describe('RRF (§16.3)', () => {
  it('scores Σ weight / (rrfK + rank) with 1-based ranks', () => {
    const out = fuse(
      [list('a', [{ id: 'x' }, { id: 'y' }, { id: 'z' }]), list('b', [{ id: 'y' }, { id: 'w' }], { weight: 2 })],
      'rrf',
      opts(),
    );
    const byId = new Map(out.hits.map((h) => [h.id, h.score]));
    expect(byId.get('y')).toBeCloseTo(1 / 62 + 2 / 61, 15);
    expect(byId.get('w')).toBeCloseTo(2 / 62, 15);
    expect(byId.get('x')).toBeCloseTo(1 / 61, 15);
    expect(byId.get('z')).toBeCloseTo(1 / 63, 15);
    expect(ids(out.hits)).toEqual(['y', 'w', 'x', 'z']);
    expect(out.method).toBe('rrf');
    expect(out.notes).toEqual([]);
  });

  it('honours rrfK: a larger constant flattens the contribution of rank', () => {
    const lists = [list('a', [{ id: 'top' }, { id: 'mid' }]), list('b', [{ id: 'other' }, { id: 'mid' }])];
    const sharp = fuse(lists, 'rrf', opts({ rrfK: 0 }));
    // rrfK 0: top = 1, other = 1, mid = 1/2 + 1/2 = 1 → three-way tie, broken by summed weight (mid: 2).
    expect(ids(sharp.hits)).toEqual(['mid', 'other', 'top']);
    const flat = fuse(lists, 'rrf', opts({ rrfK: 1000 }));
    expect(flat.hits[0]!.id).toBe('mid');
    expect(flat.hits[0]!.score).toBeCloseTo(2 / 1002, 15);
  });

  it('breaks ties by fused score, then summed weight, then smaller stringified id', () => {
    // rrfK 0: p at rank 2 in a → 1/2 (weight sum 1); q at rank 4 in b and c → 1/4 + 1/4 = 1/2 (weight sum 2).
    const out = fuse(
      [
        list('a', [{ id: 'a1' }, { id: 'p' }]),
        list('b', [{ id: 'b1' }, { id: 'b2' }, { id: 'b3' }, { id: 'q' }]),
        list('c', [{ id: 'c1' }, { id: 'c2' }, { id: 'c3' }, { id: 'q' }]),
      ],
      'rrf',
      opts({ rrfK: 0 }),
    );
    const order = ids(out.hits);
    expect(order.slice(0, 3)).toEqual(['a1', 'b1', 'c1']); // 1/1 each, equal weight → id order
    expect(order.indexOf('q')).toBeLessThan(order.indexOf('p')); // same fused score, more summed weight
    // Stringified ids compare as strings: "10" < "9".
    const numeric = fuse([list('a', [{ id: 9 }]), list('b', [{ id: 10 }])], 'rrf', opts());
    expect(ids(numeric.hits)).toEqual([10, 9]);
  });

  it('is independent of the order the engines answered in', () => {
    const a = list('a', [{ id: 'x' }, { id: 'y' }, { id: 'z' }]);
    const b = list('b', [{ id: 'z' }, { id: 'x' }, { id: 'q' }]);
    expect(fuse([a, b], 'rrf', opts()).hits).toEqual(fuse([b, a], 'rrf', opts()).hits);
  });

  it('never returns more than k hits, scores descending', () => {
    const many = (engine: string, n: number): RankedList =>
      list(
        engine,
        Array.from({ length: n }, (_, i) => ({ id: `${engine}${i}` })),
      );
    const out = fuse([many('a', 30), many('b', 30)], 'rrf', opts({ k: 7 }));
    expect(out.hits).toHaveLength(7);
    expect(out.total).toBe(60); // distinct identities before the cut
    const scores = out.hits.map((h) => h.score);
    expect([...scores].sort((x, y) => y - x)).toEqual(scores);
    expect(fuse([many('a', 3)], 'rrf', opts({ k: 7 })).hits).toHaveLength(3);
    expect(fuse([], 'rrf', opts()).hits).toEqual([]);
  });

  it('counts one vote per engine even when an engine repeats an identity', () => {
    const out = fuse(
      [
        list('a', [
          { id: 'x', citation: { source: 's', uri: 'u' } },
          { id: 'y', citation: { source: 's', uri: 'u' } },
        ]),
      ],
      'rrf',
      opts({ dedup: 'citation.uri' }),
    );
    expect(out.hits).toHaveLength(1);
    expect(out.hits[0]!.score).toBeCloseTo(1 / 61, 15);
  });
});

describe('dedup, merge and origin tags (§16.3)', () => {
  it('collapses by stringified id across engines (1 and "1" are one document)', () => {
    const out = fuse([list('a', [{ id: 1 }]), list('b', [{ id: '1' }])], 'rrf', opts());
    expect(out.hits).toHaveLength(1);
    expect(meta(out.hits[0]).engines).toEqual([
      { engine: 'a', rank: 1, score: 100 },
      { engine: 'b', rank: 1, score: 100 },
    ]);
  });

  it('collapses by citation.uri, falling back to the id when a hit has none', () => {
    const lists = [
      list('a', [{ id: 'a-1', citation: { source: 'x', uri: 'https://doc/1' } }, { id: 'same' }]),
      list('b', [{ id: 'b-7', citation: { source: 'y', uri: 'https://doc/1' } }, { id: 'same' }]),
    ];
    const byUri = fuse(lists, 'rrf', opts({ dedup: 'citation.uri' }));
    expect(byUri.hits).toHaveLength(2);
    expect(meta(byUri.hits[0]).engines).toHaveLength(2);
    expect(fuse(lists, 'rrf', opts({ dedup: 'id' })).hits).toHaveLength(3);
  });

  it('collapses by content hash, insensitive to surrounding and repeated whitespace', () => {
    const lists = [
      list('a', [{ id: 'a-1', text: 'Boundary  layer\ntransition' }]),
      list('b', [
        { id: 'b-9', text: '  Boundary layer transition ' },
        { id: 'b-2', text: 'boundary layer transition' },
      ]),
    ];
    const out = fuse(lists, 'rrf', opts({ dedup: 'content-hash' }));
    expect(out.hits).toHaveLength(2); // case differs → a different document
    expect(dedupKey(lists[0]!.hits[0]!, 'content-hash')).toBe(dedupKey(lists[1]!.hits[0]!, 'content-hash'));
    expect(dedupKey({ id: 'n', score: 1 }, 'content-hash')).toBe('id:n');
  });

  it('writes the origin tags after the meta it keeps, in one order whether or not engines sent meta', () => {
    const tags = ['engine', 'bodyEngine', 'engineRank', 'engineScore', 'fusedScore'];
    const keys = (hit: EngineHit | undefined): string[] => Object.keys(meta(hit));
    // No engine sent meta: the tags alone (`engines` when several engines found the hit).
    const bare = fuse([list('a', [{ id: 'x' }, { id: 'y' }]), list('b', [{ id: 'y' }])], 'rrf', opts());
    expect(keys(bare.hits.find((h) => h.id === 'x'))).toEqual(tags);
    expect(keys(bare.hits.find((h) => h.id === 'y'))).toEqual([...tags, 'engines']);
    expect(meta(bare.hits.find((h) => h.id === 'y')).engines).toEqual([
      { engine: 'a', rank: 2, score: 99 },
      { engine: 'b', rank: 1, score: 100 },
    ]);
    // The kept body's meta first (a spoofed tag is overwritten in place), then another copy's new keys, then the tags.
    const kept = fuse(
      [list('a', [{ id: 'o' }, { id: 'y', meta: { year: 1962 } }]), list('b', [{ id: 'y', meta: { engine: 'spoofed', lang: 'en' } }])],
      'rrf',
      opts(),
    );
    const y = kept.hits.find((h) => h.id === 'y');
    expect(keys(y)).toEqual(['engine', 'lang', 'year', ...tags.slice(1), 'engines']);
    expect(meta(y).engine).toBe('b');
    // Only a collapsed copy sent meta (not the kept body): its keys, then the tags.
    const other = fuse([list('a', [{ id: 'y' }]), list('b', [{ id: 'o' }, { id: 'y', meta: { lang: 'fr' } }])], 'rrf', opts());
    expect(keys(other.hits.find((h) => h.id === 'y'))).toEqual(['lang', ...tags, 'engines']);
  });

  it('keeps the body of the best-ranked origin, never the longer one, and merges meta', () => {
    // §16.3's "richest body" is a SHOULD; choosing by length let any engine replace another's
    // text and citation by repeating its id, so the best-ranked origin's body is kept.
    const out = fuse(
      [
        list('a', [{ id: 'o' }, { id: 'd', text: 'short', meta: { lang: 'en', shared: 'from-a' } }]),
        list('b', [{ id: 'd', text: 'a much longer body', meta: { year: 1962, shared: 'from-b' } }]),
      ],
      'rrf',
      opts(),
    );
    const hit = out.hits.find((h) => h.id === 'd')!;
    expect(hit.text).toBe('a much longer body'); // b ranked it 1st, a 2nd
    expect(meta(hit)).toMatchObject({ lang: 'en', year: 1962, shared: 'from-b', engine: 'b', bodyEngine: 'b' }); // the kept body's meta wins
    const tie = fuse(
      [list('a', [{ id: 'd', text: 'short' }]), list('b', [{ id: 'd', text: 'x'.repeat(500), citation: { uri: 'https://phish' } }])],
      'rrf',
      opts(),
    );
    expect(tie.hits[0]!.text).toBe('short'); // equal rank and weight: the smaller engine id, not the longer text
    expect(tie.hits[0]!.citation).toBeUndefined();
    const weighted = fuse(
      [
        list('a', [{ id: 'd', text: 'x'.repeat(500) }]),
        list('b', [{ id: 'd', content: [{ type: 'image', mimeType: 'image/png', uri: 'https://p/1.png' }] }], { weight: 2 }),
      ],
      'rrf',
      opts(),
    );
    expect(weighted.hits[0]!.content).toHaveLength(1); // equal rank: the higher-weighted engine's body
    expect(meta(weighted.hits[0]!).bodyEngine).toBe('b');
  });

  it('never merges hits of engines in different id spaces; one space fuses as before', () => {
    const spaced = (engine: string, idSpace: string, hits: Array<Partial<EngineHit> & { id: string | number }>): RankedList =>
      list(engine, hits, { idSpace });
    const apart = fuse(
      [spaced('a', 'corpus-a', [{ id: 42, text: 'A' }]), spaced('b', 'corpus-b', [{ id: '42', text: 'B' }])],
      'rrf',
      opts(),
    );
    expect(apart.hits.map((h) => h.text).sort()).toEqual(['A', 'B']);
    const together = fuse([spaced('a', 'one', [{ id: 42 }]), spaced('b', 'one', [{ id: '42' }])], 'rrf', opts());
    expect(together.hits).toHaveLength(1);
    expect(dedupKey({ id: 42, score: 1 }, 'id', 'corpus-a')).not.toBe(dedupKey({ id: 42, score: 1 }, 'id', 'corpus-b'));
  });

  it('tags the origin: meta.engine / engineRank / engineScore of the best rank, and meta.fusedScore', () => {
    const out = fuse([list('a', [{ id: 'o' }, { id: 'd', score: 3.5 }]), list('b', [{ id: 'd', score: 0.25 }])], 'rrf', opts());
    const d = out.hits.find((h) => h.id === 'd')!;
    expect(meta(d)).toMatchObject({ engine: 'b', engineRank: 1, engineScore: 0.25 });
    expect(meta(d).fusedScore).toBe(d.score);
    const o = out.hits.find((h) => h.id === 'o')!;
    expect(meta(o)).toMatchObject({ engine: 'a', engineRank: 1, engineScore: 100 });
    expect(meta(o).engines).toBeUndefined(); // only one engine returned it
  });

  it('leaves out excluded identities (an earlier page)', () => {
    const out = fuse([list('a', [{ id: 'x' }, { id: 'y' }, { id: 'z' }])], 'rrf', opts({ exclude: new Set(['id:y']) }));
    expect(ids(out.hits)).toEqual(['x', 'z']);
    // Ranks are the engine's, not renumbered: z keeps rank 3.
    expect(out.hits[1]!.score).toBeCloseTo(1 / 63, 15);
  });
});

describe('weighted min-max and convex (§16.3)', () => {
  it('normalises scores an engine spreads to the ends of the number range without NaN', () => {
    // `max - min` of ±1.7e308 overflows to Infinity: the top hit's score became NaN (`null` in the
    // answer) and pages were no longer prefixes of one order.
    const hostile = list('a', [
      { id: 'h0', score: 0 },
      { id: 'h1', score: 1.7e308 },
      { id: 'h2', score: -1.7e308 },
    ]);
    const other = list('b', [
      { id: 'g0', score: 10 },
      { id: 'g1', score: 5 },
    ]);
    for (const [method, lists] of [
      ['weighted', [hostile, other]],
      [
        'convex',
        [
          { ...hostile, scoreFloor: -1.7e308 },
          { ...other, scoreFloor: 0 },
        ],
      ],
    ] as const) {
      const all = fuse(lists, method, opts({ k: Infinity }));
      expect(all.method).toBe(method);
      expect(all.hits.every((hit) => Number.isFinite(hit.score) && Number.isFinite(meta(hit).fusedScore))).toBe(true);
      expect(JSON.stringify(all.hits)).not.toContain('null');
      // Each engine's top hit normalises to 1: a tie, broken by the smaller id.
      expect(all.hits.slice(0, 2).map((hit) => [hit.id, hit.score])).toEqual([
        ['g0', 1],
        ['h1', 1],
      ]);
      for (const k of [1, 2, 3]) expect(fuse(lists, method, opts({ k })).hits).toEqual(all.hits.slice(0, k));
    }
  });

  const a = list(
    'a',
    [
      { id: 'x', score: 10 },
      { id: 'y', score: 6 },
      { id: 'z', score: 2 },
    ],
    { scoreFloor: 0 },
  );
  const b = list(
    'b',
    [
      { id: 'y', score: 0.9 },
      { id: 'w', score: 0.5 },
    ],
    { scoreFloor: -1, weight: 2 },
  );

  it('weighted: per-engine min-max to [0,1] over the returned set, times the engine weight', () => {
    const out = fuse([a, b], 'weighted', opts());
    const score = new Map(out.hits.map((h) => [h.id, h.score]));
    expect(score.get('x')).toBeCloseTo(1, 12);
    expect(score.get('y')).toBeCloseTo(0.5 + 2 * 1, 12);
    expect(score.get('z')).toBeCloseTo(0, 12);
    expect(score.get('w')).toBeCloseTo(0, 12);
    expect(ids(out.hits)).toEqual(['y', 'x', 'w', 'z']); // w and z tie at 0: w has more weight
    expect(out.method).toBe('weighted');
  });

  it('weighted: a single hit (degenerate range) normalises to 1', () => {
    const out = fuse([list('a', [{ id: 'only', score: 7 }])], 'weighted', opts());
    expect(out.hits[0]!.score).toBe(1);
  });

  it('convex: the normalisation minimum is the advertised scoreFloor, not the worst returned score', () => {
    const out = fuse([a, b], 'convex', opts());
    const score = new Map(out.hits.map((h) => [h.id, h.score]));
    expect(score.get('x')).toBeCloseTo(1, 12); // (10-0)/(10-0)
    expect(score.get('z')).toBeCloseTo(0.2, 12); // (2-0)/(10-0): min-max would give 0
    expect(score.get('y')).toBeCloseTo(0.6 + 2 * 1, 12);
    expect(score.get('w')).toBeCloseTo(2 * (1.5 / 1.9), 12); // (0.5+1)/(0.9+1), weight 2
    expect(out.method).toBe('convex');
    expect(out.notes).toEqual([]);
  });

  it('convex: scores at the floor normalise to 0 even when they are all the engine returned', () => {
    const out = fuse([list('a', [{ id: 'f', score: 0 }], { scoreFloor: 0 })], 'convex', opts());
    expect(out.hits[0]!.score).toBe(0);
  });

  it('convex falls back to RRF with a note when an engine has no scoreFloor', () => {
    const noFloor = list('c', [{ id: 'y', score: 42 }]);
    const out = fuse([a, noFloor], 'convex', opts());
    expect(out.method).toBe('rrf');
    expect(out.notes).toHaveLength(1);
    expect(out.notes[0]).toMatch(/convex.*scoreFloor.*missing: c.*rrf/);
    expect(out.hits[0]!.id).toBe('y');
    expect(out.hits[0]!.score).toBeCloseTo(1 / 62 + 1 / 61, 15);
  });
});
