/**
 * The benchmark harness must not rot: run it with tiny durations (`--smoke`, nothing appended to
 * bench/RESULTS.md) and check that it printed every figure. Timing itself is not asserted.
 */
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { runScript } from './run-script.js';

/** bench/instructions.js counts under valgrind (.ci/run installs it); without it the smoke shows as skipped. */
const HAS_VALGRIND = spawnSync('valgrind', ['--version']).status === 0;

const SCENARIOS = [
  'A client → engine',
  'B client → gateway → 1 engine',
  'D1 bare proxy → 1 engine',
  'F1 spec floor → 1 engine',
  'F spec floor → 3 engines',
  'C client → gateway → 3 engines',
  'D bare fan-out ceiling → 3 engines',
  'E SSE, progress relayed, 3 engines',
  'C with --workers 2',
];
/** compare.js at its smallest: two rounds of short slices at low load. */
const TINY_COMPARE = ['--rounds', '2', '--seconds', '0.3', '--warmup', '0.3', '--connections', '8'];
/** compare.js's summary row for one variant (or one family of instances). */
const compareRow = (name: string): RegExp =>
  new RegExp(`^${name}\\s+\\d+ req/s\\s+\\d+ µs/req\\s+load generator \\d+ µs/req\\s+CPU ÷ bare [\\d.]+\\s+req/s ÷ bare [\\d.]+$`, 'm');
const RATIOS = ['B÷A', 'B÷D1', 'C÷D', 'B÷F1', 'C÷F', 'C 2w÷1w', 'fusion÷parse', 'KB per SSE stream'];

describe('bench harness (smoke)', () => {
  it('runs every scenario and prints every figure', async () => {
    const { code, out } = await runScript('bench/run.js', ['--smoke']);
    expect(out, out).not.toContain('FAILED');
    expect(code, out).toBe(0);
    for (const scenario of SCENARIOS) {
      // label, req/s, p50, p99, p99.9, offered rate, CPU per request, 0 bad answers
      expect(out, `${scenario}\n${out}`).toMatch(
        new RegExp(`^${scenario}\\s+\\d+\\s+\\d+\\.\\d\\d\\s+\\d+\\.\\d\\d\\s+\\d+\\.\\d\\d\\s+\\d+\\s+\\d+\\s+0$`, 'm'),
      );
    }
    // 50 streams are too few for a stable RSS delta: the smoke run may even print a negative one.
    for (const ratio of RATIOS)
      expect(out, `${ratio}\n${out}`).toMatch(new RegExp(`^ratio ${ratio} = -?\\d+\\.\\d+ \\(target [≥≤] [\\d.]+\\): (met|missed)`, 'm'));
    expect(out, out).toMatch(/memory: 50 open SSE streams \(3 legs each\): RSS [\d.]+ → [\d.]+ MiB/);
    expect(out, out).toMatch(/fusion microbenchmark: RRF 5×1000 → top 100 in [\d.]+ ms; JSON\.parse of the same hits [\d.]+ ms/);
  }, 120_000);

  it('the scaling curves print a point per engine count and per k, and the fitted costs', async () => {
    const { code, out } = await runScript('bench/scaling.js', ['--smoke']);
    expect(code, out).toBe(0);
    for (const count of [1, 2, 4, 8]) {
      expect(out, out).toMatch(
        new RegExp(
          `^  ${count} engine\\(s\\): gateway \\d+ req/s, \\d+ µs CPU/req; ceiling \\d+ req/s, \\d+ µs; gateway÷ceiling \\d+\\.\\d\\d$`,
          'm',
        ),
      );
    }
    for (const k of [10, 25, 50, 100]) {
      expect(out, out).toMatch(
        new RegExp(`^  k ${k} \\(${2 * k} hits × 3 engines\\): \\d+ req/s, \\d+ µs CPU/req, [\\d.]+ µs per upstream hit$`, 'm'),
      );
    }
    expect(out, out).toMatch(/^gateway CPU per request ≈ -?\d+ µs \+ -?\d+ µs per engine/m);
    expect(out, out).toMatch(/^gateway CPU per request ≈ -?\d+ µs \+ -?[\d.]+ µs per upstream hit/m);
    expect(out, out).not.toContain('were not full results');
  }, 180_000);

  it('the paired comparison prints each variant beside the spec floor and the bare ceiling', async () => {
    const { code, out } = await runScript('bench/compare.js', [...TINY_COMPARE, '--bare-variant', 'bare-32=--max-semi-space-size=32']);
    expect(code, out).toBe(0);
    expect(out, out).toMatch(
      /^round 2: gateway \d+ µs \([\d.]+\), spec floor \d+ µs \([\d.]+\), bare-32 \d+ µs \([\d.]+\), bare \d+ µs \(1\.00\)$/m,
    );
    for (const name of ['gateway', 'bare-32']) expect(out, out).toMatch(compareRow(name));
    expect(out, out).toMatch(/^gateway\s+against the spec floor: CPU ÷ floor [\d.]+\s+req\/s ÷ floor [\d.]+$/m);
    expect(out, out).not.toContain('bad ');
  }, 120_000);

  it('the paired comparison judges each further gateway variant against the first with the sign test', async () => {
    const { code, out } = await runScript('bench/compare.js', [
      ...TINY_COMPARE,
      '--no-spec',
      '--variant',
      'plain=dist/cli/main.js',
      '--variant',
      'quiet=dist/cli/main.js@{"logLevel":"warn"}',
    ]);
    expect(code, out).toBe(0);
    // Two rounds asked for, three variants (plain, quiet, bare): rounded up to one whole turn of
    // the order, so each holds each place once.
    expect(out, out).toMatch(/^quiet\s+CPU ÷ plain, per round: [\d.]+, lower in [0-3] of 3 rounds \(sign test p = [\d.]+\)$/m);
    expect(out, out).not.toMatch(/^plain\s+CPU ÷ plain/m);
    expect(out, out).not.toContain('bad ');
  }, 120_000);

  it('the paired comparison runs several instances per variant and prints each instance beside the family', async () => {
    const { code, out } = await runScript('bench/compare.js', [...TINY_COMPARE, '--no-spec', '--instances', '2']);
    expect(code, out).toBe(0);
    // gateway#1, gateway#2, bare#1, bare#2: two rounds asked for, rounded up to one whole turn of four.
    expect(out, out).toMatch(/^round 4: /m);
    expect(out, out).not.toMatch(/^round 5: /m);
    expect(out, out).toMatch(/^round 1: .*gateway#1 \d+ µs .*gateway#2 \d+ µs .*bare#1 \d+ µs .*bare#2 \d+ µs/m);
    expect(out, out).toMatch(/^gateway\s+CPU ÷ bare per instance: [\d.]+, [\d.]+$/m);
    expect(out, out).toMatch(compareRow('gateway'));
    expect(out, out).not.toContain('bad ');
  }, 120_000);

  it('the core cost runs a build against another in one process and prints both and their ratio', async () => {
    const { code, out } = await runScript('bench/core-cost.js', [
      '--seconds',
      '0.5',
      '--engines',
      '3',
      '--delay-ms',
      '1',
      '--against',
      'dist',
      '--meta',
      '{"traceId":"smoke-1"}',
    ]);
    expect(code, out).toBe(0);
    expect(out, out).toMatch(
      /^core cost \(3 engine\(s\), 20 hits each, 32 concurrent, engines answer after 1 ms\) dist: [\d.]+ µs CPU per request \(\d+ requests\)$/m,
    );
    expect(out, out).toMatch(/^ratio dist ÷ dist: [\d.]+$/m);
  }, 60_000);

  it.skipIf(!HAS_VALGRIND)(
    'the instruction count runs a build against another under valgrind and prints both and their ratio',
    async () => {
      const { code, out } = await runScript('bench/instructions.js', [
        '--engines',
        '1',
        '--observed',
        '--warmup',
        '20',
        '--requests',
        '10',
        '--against',
        'dist',
      ]);
      expect(code, out).toBe(0);
      expect(out, out).toMatch(/^instructions \(1 engine\(s\), observed, 10 requests after 20\) dist: [\d,]+ per request$/m);
      expect(out, out).toMatch(/^ratio dist ÷ dist: [\d.]+$/m);
    },
    300_000,
  );

  it.skipIf(!HAS_VALGRIND)(
    'the wire instruction count runs the gateway process against the bare proxy under valgrind and prints both, their cache misses and their ratios',
    async () => {
      const { code, out } = await runScript('bench/wire-instructions.js', [
        '--engines',
        '1',
        '--warmup',
        '100',
        '--requests',
        '50',
        '--against',
        'bare',
        '--cache',
      ]);
      expect(code, out).toBe(0);
      // The plumbing only: after so short a warm-up the gateway still compiles, and a difference of two
      // counts this small can even come out negative (the defaults warm up 6,000 requests).
      const misses = 'I1 misses -?[\\d,]+, D refs -?[\\d,]+, D1 misses -?[\\d,]+, LL misses -?[\\d,]+';
      for (const server of ['dist', 'bare']) {
        expect(out, out).toMatch(
          new RegExp(
            `^wire instructions \\(1 engine\\(s\\), 50 requests after 100\\) ${server}: -?[\\d,]+ per request \\(${misses}\\)$`,
            'm',
          ),
        );
      }
      // A ratio of two such small differences can be anything, a division by zero included.
      const ratio = '(?:-?(?:[\\d.]+|Infinity)|NaN)';
      expect(out, out).toMatch(
        new RegExp(`^ratio dist ÷ bare: ${ratio}, I1 misses ${ratio}, D refs ${ratio}, D1 misses ${ratio}, LL misses ${ratio}$`, 'm'),
      );
    },
    600_000,
  );

  it('the allocation profile prints bytes per request for the gateway and the bare proxy', async () => {
    const { code, out } = await runScript('bench/allocation.js', ['--seconds', '1', '--warmup', '1', '--top', '5']);
    expect(code, out).toBe(0);
    for (const server of ['gateway', 'bare proxy']) {
      expect(out, out).toMatch(new RegExp(`^${server}, 1 engine\\(s\\): \\d+ req/s, [\\d.]+ KB allocated per request$`, 'm'));
    }
    expect(out.match(/^ +\d+ B {2}\S/gm)?.length ?? 0, out).toBeGreaterThanOrEqual(2);
  }, 60_000);
});
