/**
 * The hedging benchmark must not rot: run it with tiny counts (`--smoke`, nothing appended to
 * bench/RESULTS.md) and check that it printed both gateways' figures and both ratios. Timing
 * itself is not asserted; the request counts are.
 */
import { describe, expect, it } from 'vitest';
import { runScript } from './run-script.js';

describe('hedging bench (smoke)', () => {
  it('prints p99 with and without hedging, the extra load and both ratios, for real processes and the policy alone', async () => {
    const { code, out } = await runScript('bench/hedging.js', ['--smoke']);
    expect(code, out).toBe(0);
    // The unhedged gateway sends exactly one upstream request per read.
    expect(out, out).toMatch(/^\| balanced, no hedging \| 100 \| 140 \| 140 \| 0\.0 % \| [\d.]+ \| [\d.]+ \| [\d.]+ \| \d+ \| — \|$/m);
    expect(out, out).toMatch(/^\| balanced \+ hedging \(p95, budget 0\.05\) \| 100 \| 140 \| 14[0-7] \| [\d.]+ % \|/m);
    expect(out, out).toMatch(/^\| hedged p99 ÷ unhedged p99 \| [\d.]+ \| ≤ 0\.2 \| (met|missed) \|$/m);
    expect(out, out).toMatch(/^\| extra upstream requests \(hedged\) \| [\d.]+ % \| ≤ 5 % \| met \|$/m);
    expect(out.match(/^\| hedged p99 ÷ unhedged p99 \|/gm), out).toHaveLength(2);
  }, 120_000);
});
