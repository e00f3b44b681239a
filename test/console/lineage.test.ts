/**
 * Fusion lineage, the explorer's debugging aid: asked for with `_meta["x-rcpgw"].lineage`, the
 * answer carries each engine's own list and, per fused hit, contributions that add up to its fused
 * score exactly; an answer that did not ask is unchanged. Pure fusion, then the gateway in process.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { fuse } from '../../src/core/federation/fusion/fuse.js';
import { fusionLineage } from '../../src/core/federation/fusion/lineage.js';
import type { FusionMethod, RankedList } from '../../src/core/federation/fusion/types.js';
import type { JsonObject } from '../../src/core/protocol/jsonrpc.js';
import { FakeEngine } from '../support/fake-engine.js';
import { startInProcess, type InProcessGateway } from '../support/in-process.js';

const lists: RankedList[] = [
  {
    engine: 'b',
    weight: 2,
    scoreFloor: 0,
    hits: [
      { id: 'x', score: 9 },
      { id: 'y', score: 4 },
      { id: 'z', score: 1 },
    ],
  },
  {
    engine: 'a',
    weight: 1,
    scoreFloor: 0,
    hits: [
      { id: 'y', score: 0.9, text: 'why' },
      { id: 'w', score: 0.5 },
      { id: 'x', score: 0.2 },
    ],
  },
];

describe('fusionLineage', () => {
  it.each<FusionMethod>(['rrf', 'weighted', 'convex'])(
    '%s: contributions sum to each fused score exactly and name the engine ranks',
    (method) => {
      const fused = fuse(lists, method, { k: 10, rrfK: 60, dedup: 'id' });
      const lineage = fusionLineage(lists, fused.hits, fused.method, 60);
      expect(lineage.hits.map((h) => h.id)).toEqual(fused.hits.map((h) => h.id));
      for (const entry of lineage.hits) {
        const sum = entry.contributions.reduce((total, c) => total + c.contribution, 0);
        expect(sum).toBe(entry.fusedScore);
        for (const c of entry.contributions) {
          const own = lineage.lists.find((list) => list.engine === c.engine)!;
          expect(own.hits[c.rank - 1]!.id).toBe(entry.id);
        }
      }
      const x = lineage.hits.find((h) => h.id === 'x')!;
      expect(x.contributions.map((c) => [c.engine, c.rank])).toEqual([
        ['a', 3],
        ['b', 1],
      ]);
    },
  );

  it('rrf contributions are weight / (rrfK + rank)', () => {
    const fused = fuse(lists, 'rrf', { k: 10, rrfK: 60, dedup: 'id' });
    const y = fusionLineage(lists, fused.hits, 'rrf', 60).hits.find((h) => h.id === 'y')!;
    expect(y.contributions).toEqual([
      { engine: 'a', rank: 1, score: 0.9, weight: 1, contribution: 1 / 61 },
      { engine: 'b', rank: 2, score: 4, weight: 2, contribution: 2 / 62 },
    ]);
  });

  it("lists each engine's own ranking with excerpts, in engine-id order", () => {
    const fused = fuse(lists, 'rrf', { k: 2, rrfK: 60, dedup: 'id' });
    const lineage = fusionLineage(lists, fused.hits, 'rrf', 60);
    expect(lineage.lists.map((l) => l.engine)).toEqual(['a', 'b']);
    expect(lineage.lists[0]!.hits[0]).toEqual({ id: 'y', rank: 1, score: 0.9, text: 'why' });
    expect(lineage.hits).toHaveLength(2);
  });
});

describe('retrieve with _meta["x-rcpgw"].lineage', () => {
  let running: InProcessGateway | undefined;
  afterEach(async () => {
    await running?.stop();
    running = undefined;
  });

  const hits = (ids: string[]): Array<{ id: string; score: number }> => ids.map((id, i) => ({ id, score: 10 - i }));

  it('adds the lineage only when asked, and leaves the hits as they are', async () => {
    running = await startInProcess([new FakeEngine('a', { hits: hits(['p', 'q', 'r']) }), new FakeEngine('b', { hits: hits(['q', 's']) })]);
    const plain = await running.call('retrieve', { query: 'anything', k: 3 });
    const explained = await running.call('retrieve', { query: 'anything', k: 3, _meta: { 'x-rcpgw': { lineage: true } } });
    expect((plain._meta as JsonObject)['x-rcpgw']).toBeUndefined();
    expect(explained.hits).toEqual(plain.hits);
    const lineage = ((explained._meta as JsonObject)['x-rcpgw'] as JsonObject).lineage as ReturnType<typeof fusionLineage>;
    expect(lineage.method).toBe('rrf');
    expect(lineage.lists.map((l) => [l.engine, l.hits.map((h) => h.id)])).toEqual([
      ['a', ['p', 'q', 'r']],
      ['b', ['q', 's']],
    ]);
    const top = (explained.hits as Array<{ id: string; score: number }>)[0]!;
    expect(top.id).toBe('q');
    const q = lineage.hits[0]!;
    expect(q.contributions.map((c) => c.engine)).toEqual(['a', 'b']);
    expect(q.contributions.reduce((total, c) => total + c.contribution, 0)).toBe(top.score);
  });

  it('refuses a lineage flag that is not a boolean (-32602)', async () => {
    running = await startInProcess([new FakeEngine('a')]);
    await expect(running.call('retrieve', { query: 'x', _meta: { 'x-rcpgw': { lineage: 'yes' } } })).rejects.toMatchObject({
      code: -32602,
    });
  });
});
