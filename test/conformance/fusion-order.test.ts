/**
 * The fused order of real engine answers matches the reference RRF fusers (§16.3): ties broken by
 * the smaller stringified id in code-point order, with ids outside the Basic Multilingual Plane
 * (where JavaScript's code-unit `<` would order them the other way).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { emittedErrors, schemaCrossCheckBanner } from '../support/spec-validator.js';
import { tmpDir, writeConfig, type GatewayHandle } from '../support/processes.js';
import { Fleet, rpc, withRetrieve } from '../routing/fixtures.js';

const fleet = new Fleet();
let gw: GatewayHandle;

interface Fused {
  hits: Array<{ id: string; score: number; meta: { engine: string; engineRank: number; fusedScore: number; engines?: unknown[] } }>;
}

beforeAll(async () => {
  const dir = tmpDir('rcp-fusion-order-');
  // Each engine ranks its own non-BMP/BMP id first and a shared document second.
  const corpus = (first: string): string =>
    writeConfig(
      dir,
      [
        { id: first, text: 'wing wing flutter' },
        { id: 'shared', text: 'wing' },
      ],
      `corpus-${first.codePointAt(0)!.toString(16)}.json`,
    );
  const [x, y] = await Promise.all([
    fleet.engine('x', withRetrieve(), ['--corpus', corpus('\u{1F600}')]),
    fleet.engine('y', withRetrieve(), ['--corpus', corpus('\uFF5E')]),
  ]);
  gw = await fleet.gateway([{ engine: x }, { engine: y }]);
});

afterAll(async () => {
  await fleet.stop();
  console.log(schemaCrossCheckBanner());
  expect(emittedErrors()).toEqual([]);
});

describe('fused order of real answers', () => {
  it('breaks an exact tie by code-point order of the id (U+FF5E before U+1F600), as the reference fusers do', async () => {
    const reply = await rpc<Fused>(gw.url, 'retrieve', { query: 'wing flutter', k: 3 });
    const { hits } = reply.result!;
    expect(hits.map((hit) => hit.id)).toEqual(['shared', '\uFF5E', '\u{1F600}']);
    // The two rank-1 hits tie exactly: one engine each, same rank, same weight.
    expect(hits[1]!.score).toBe(hits[2]!.score);
    expect(hits[1]!.score).toBe(1 / 61);
    expect(hits[0]!.score).toBe(1 / 62 + 1 / 62);
    expect(hits[1]!.meta).toMatchObject({ engine: 'y', engineRank: 1, fusedScore: 1 / 61 });
    expect(hits[1]!.meta.engines).toBeUndefined(); // only one engine returned it
    expect(hits[0]!.meta.engines).toHaveLength(2);
  });
});
