import { describe, expect, it } from 'vitest';
import { ExperimentsSchema } from '../../src/core/experiments/arms.js';
import { ConfigError, parseConfig } from '../../src/node/config/load.js';

const engines = [
  { id: 'titles', transport: 'http', url: 'http://127.0.0.1:1/rcp' },
  { id: 'abstracts', transport: 'http', url: 'http://127.0.0.1:2/rcp' },
];
const SECRET = 'a-secret-of-sixteen+';

function problemsOf(experiments: unknown): string[] {
  try {
    parseConfig({ engines, gateway: { experiments } }, { baseDir: '/' });
    return [];
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
}

describe('gateway.experiments schema', () => {
  it('is absent by default and fills defaults when present', () => {
    expect(parseConfig({ engines }, { baseDir: '/' }).config.gateway.experiments).toBeUndefined();
    const parsed = ExperimentsSchema.parse({
      arms: { t: { engines: ['titles'] }, a: { engines: ['abstracts'], fusion: 'rrf', rrfK: 10 } },
      list: [{ id: 'x', kind: 'split', arms: { t: 1, a: 1 } }],
    });
    expect(parsed.tokenTtlMs).toBe(86_400_000);
    expect(parsed.list[0]).toMatchObject({ traffic: 1, allowForce: false, assignBy: { header: 'x-rcpgw-user' } });
  });

  it('accepts a full valid section inside a gateway config', () => {
    const { config } = parseConfig(
      {
        engines,
        gateway: {
          experiments: {
            secret: SECRET,
            arms: {
              titles: { engines: ['titles'] },
              fused: { engines: ['titles', 'abstracts'], weights: { abstracts: 2 }, fusion: 'weighted', fusionHeadroom: 3 },
            },
            list: [
              { id: 'split-1', kind: 'split', arms: { titles: 1, fused: 3 }, traffic: 0.2, assignBy: { param: 'sessionId' } },
              { id: 'shadow-1', kind: 'shadow', primary: 'fused', shadow: 'titles', sample: 0.05 },
              { id: 'il-1', kind: 'interleave', arms: ['fused', 'titles'], assignBy: { header: 'X-Team' } },
            ],
          },
        },
      },
      { baseDir: '/' },
    );
    const list = config.gateway.experiments!.list;
    expect(list.map((e) => e.kind)).toEqual(['split', 'shadow', 'interleave']);
    expect(list[2]!.assignBy).toEqual({ header: 'x-team' }); // header names are matched lower-cased
  });

  it('names the path of every problem', () => {
    const problems = problemsOf({
      arms: { t: { engines: ['titles', 'nope'], weights: { abstracts: 1 } }, empty: { engines: [] } },
      list: [
        { id: 'a', kind: 'split', arms: { t: 1, ghost: 1 } },
        { id: 'a', kind: 'split', arms: { t: 1 } },
        { id: 'b', kind: 'shadow', primary: 't', shadow: 't' },
        { id: 'c', kind: 'interleave', arms: ['t', 't'] },
        { id: 'd', kind: 'split', arms: { t: 0, empty: 0 }, traffic: 2 },
      ],
    });
    expect(problems).toEqual(
      expect.arrayContaining([
        'gateway.experiments.arms.empty.engines: expected at least one engine id',
        'gateway.experiments.list[0].arms.ghost: unknown arm "ghost"',
        'gateway.experiments.list[1].id: duplicate experiment id "a" (also list[0])',
        'gateway.experiments.list[1].arms: expected at least two arms',
        'gateway.experiments.list[2].shadow: expected an arm other than the primary',
        'gateway.experiments.list[3].arms: expected two different arms',
        'gateway.experiments.secret: required by interleave experiment "c" (signs attribution tokens)',
        'gateway.experiments.list[4].traffic: expected a share in [0, 1]',
      ]),
    );
  });

  it('checks arm engines against the engine registry', () => {
    const problems = problemsOf({ arms: { t: { engines: ['titles', 'nope'], weights: { abstracts: 1 } } } });
    expect(problems).toEqual([
      'gateway.experiments.arms.t.engines[1]: unknown engine id "nope"',
      'gateway.experiments.arms.t.weights.abstracts: engine "abstracts" is not one of this arm\'s engines',
    ]);
  });

  it('rejects unknown keys and a short secret', () => {
    const problems = problemsOf({ secret: 'short', arms: { t: { engines: ['titles'], boost: 2 } }, list: [{ id: 'x', kind: 'mystery' }] });
    expect(problems.some((p) => p.startsWith('gateway.experiments.secret: expected at least 16 characters'))).toBe(true);
    expect(problems.some((p) => p.startsWith('gateway.experiments.arms.t: unknown key(s) "boost"'))).toBe(true);
    expect(problems.some((p) => p.startsWith('gateway.experiments.list[0].kind'))).toBe(true);
  });
});
