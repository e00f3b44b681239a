import { describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { ExperimentSchema, type ExperimentConfig } from '../../src/core/experiments/arms.js';
import { assign, assignmentKeyOf, assignmentMeta, uniformSlots } from '../../src/core/experiments/assignment.js';
import { RcpError } from '../../src/core/protocol/errors.js';
import { REPO_ROOT } from '../support/processes.js';

const split = (extra: Record<string, unknown> = {}): ExperimentConfig =>
  ExperimentSchema.parse({ id: 'exp-1', kind: 'split', arms: { control: 1, treatment: 1, wide: 2 }, ...extra });
const byUser = (user: string, params: Record<string, unknown> = {}) => ({
  params: { query: 'q', ...params },
  headers: { 'x-rcpgw-user': user },
});
const KEYS = Array.from({ length: 10_000 }, (_, i) => `user-${i}`);

describe('split assignment', () => {
  it('gives each arm its share of 10,000 distinct keys, within ±2 points', () => {
    const experiment = split();
    const counts = new Map<string, number>();
    for (const key of KEYS) {
      const arm = assign(experiment, byUser(key))!.arm;
      counts.set(arm, (counts.get(arm) ?? 0) + 1);
    }
    const shares = Object.fromEntries([...counts].map(([arm, n]) => [arm, n / KEYS.length]));
    expect(Object.keys(shares).sort()).toEqual(['control', 'treatment', 'wide']);
    expect(Math.abs(shares.control! - 0.25)).toBeLessThanOrEqual(0.02);
    expect(Math.abs(shares.treatment! - 0.25)).toBeLessThanOrEqual(0.02);
    expect(Math.abs(shares.wide! - 0.5)).toBeLessThanOrEqual(0.02);
  });

  it('admits the traffic share of keys, within ±2 points, and leaves the rest out', () => {
    const experiment = split({ traffic: 0.3 });
    const admitted = KEYS.filter((key) => assign(experiment, byUser(key)) !== undefined).length;
    expect(Math.abs(admitted / KEYS.length - 0.3)).toBeLessThanOrEqual(0.02);
    expect(assign(split({ traffic: 0 }), byUser('anyone'))).toBeUndefined();
  });

  it('is sticky per key, independent of arm order in the config, and differs across experiments', () => {
    const a = split();
    const reordered = ExperimentSchema.parse({ id: 'exp-1', kind: 'split', arms: { wide: 2, treatment: 1, control: 1 } });
    const other = ExperimentSchema.parse({ id: 'exp-2', kind: 'split', arms: { control: 1, treatment: 1, wide: 2 } });
    let differs = 0;
    for (const key of KEYS.slice(0, 500)) {
      const arm = assign(a, byUser(key))!.arm;
      expect(assign(a, byUser(key))!.arm).toBe(arm);
      expect(assign(reordered, byUser(key))!.arm).toBe(arm);
      if (assign(other, byUser(key))!.arm !== arm) differs++;
    }
    expect(differs).toBeGreaterThan(100); // independent hashing per experiment
  });

  it('reads the key from a header, a params field or a _meta key; no key means no assignment', () => {
    const params = { query: 'q', sessionId: 's-1', _meta: { tenant: 't-9' } };
    const request = { params, headers: { 'x-rcpgw-user': 'u-1' } };
    expect(assignmentKeyOf({ header: 'x-rcpgw-user' }, request)).toBe('u-1');
    expect(assignmentKeyOf({ param: 'sessionId' }, request)).toBe('s-1');
    expect(assignmentKeyOf({ meta: 'tenant' }, request)).toBe('t-9');
    expect(assignmentKeyOf({ meta: 'absent' }, request)).toBeUndefined();
    expect(assign(split(), { params: { query: 'q' }, headers: {} })).toBeUndefined();
    expect(assign(split({ assignBy: { param: 'sessionId' } }), request)!.arm).toBe(assign(split(), byUser('s-1'))!.arm);
  });

  it('lets a request force its arm only when the experiment allows it', () => {
    const force = { _meta: { 'x-rcpgw': { forceArm: { 'exp-1': 'wide' } } } };
    const natural = KEYS.find((key) => assign(split(), byUser(key))!.arm !== 'wide')!;
    expect(assign(split(), byUser(natural, force))!.arm).not.toBe('wide'); // off by default: ignored
    const forced = assign(split({ allowForce: true }), byUser(natural, force))!;
    expect(forced).toMatchObject({ arm: 'wide', forced: true });
    expect(assignmentMeta(forced)).toEqual({ experiment: 'exp-1', arm: 'wide', forced: true });
    // Forcing works even without an assignment key or outside the traffic share.
    expect(assign(split({ allowForce: true, traffic: 0 }), { params: { query: 'q', ...force }, headers: {} })!.arm).toBe('wide');
    const bad = { _meta: { 'x-rcpgw': { forceArm: { 'exp-1': 'ghost' } } } };
    expect(() => assign(split({ allowForce: true }), byUser('u', bad))).toThrow(RcpError);
    try {
      assign(split({ allowForce: true }), byUser('u', bad));
    } catch (err) {
      expect((err as RcpError).code).toBe(-32602);
    }
  });

  it('samples shadow runs and admits interleaving by the same hash', () => {
    const shadow = ExperimentSchema.parse({ id: 'sh', kind: 'shadow', primary: 'p', shadow: 's', sample: 0.2 });
    const sampled = KEYS.filter((key) => assign(shadow, byUser(key))!.shadowSampled).length;
    expect(Math.abs(sampled / KEYS.length - 0.2)).toBeLessThanOrEqual(0.02);
    expect(assign(shadow, byUser('k'))!.arm).toBe('p');
    const interleave = ExperimentSchema.parse({ id: 'il', kind: 'interleave', arms: ['x', 'y'], traffic: 0.5 });
    const admitted = KEYS.filter((key) => assign(interleave, byUser(key)) !== undefined).length;
    expect(Math.abs(admitted / KEYS.length - 0.5)).toBeLessThanOrEqual(0.02);
  });
});

const BUILT = path.join(REPO_ROOT, 'dist/core/experiments/assignment.js');

describe('assignment across processes', () => {
  it.skipIf(!existsSync(BUILT))('puts the same key in the same arm in two separate node processes', () => {
    const config = {
      id: 'exp-1',
      kind: 'split',
      arms: { control: 1, treatment: 1, wide: 2 },
      traffic: 1,
      allowForce: false,
      assignBy: { header: 'x-rcpgw-user' },
    };
    const script = `
      const { assign } = await import(${JSON.stringify(pathToFileURL(BUILT).href)});
      const experiment = ${JSON.stringify(config)};
      const arms = [];
      for (let i = 0; i < 2000; i++) arms.push(assign(experiment, { params: {}, headers: { 'x-rcpgw-user': 'user-' + i } }).arm);
      process.stdout.write(JSON.stringify({ pid: process.pid, arms }));`;
    const run = (): { pid: number; arms: string[] } =>
      JSON.parse(execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' })) as {
        pid: number;
        arms: string[];
      };
    const first = run();
    const second = run();
    expect(first.pid).not.toBe(second.pid);
    expect(second.arms).toEqual(first.arms);
    const here = KEYS.slice(0, 2000).map((key) => assign(split(), byUser(key))!.arm);
    expect(first.arms).toEqual(here);
  });

  it('derives independent uniform slots in [0, 1)', () => {
    const [a, b, c] = uniformSlots('exp', 'key');
    for (const u of [a, b, c]) expect(u >= 0 && u < 1).toBe(true);
    expect(new Set([a, b, c]).size).toBe(3);
  });
});
