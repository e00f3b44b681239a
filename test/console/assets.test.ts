/**
 * The console page's weight: everything the page loads (its HTML, scripts, styles and uPlot),
 * gzipped, stays under 150 KB; and the page loads nothing the asset table does not list.
 */
import { readFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { ASSETS } from '../../src/node/console/assets.js';

const BUDGET_BYTES = 150 * 1024;

describe('console assets', () => {
  it('weigh under 150 KB gzipped, libraries included', () => {
    const sizes = Object.entries(ASSETS).map(([name, asset]) => [name, gzipSync(readFileSync(asset.file()), { level: 9 }).length] as const);
    const total = sizes.reduce((sum, [, size]) => sum + size, 0);
    console.log(
      `console page gzipped: ${(total / 1024).toFixed(1)} KB (${sizes.map(([n, s]) => `${n} ${(s / 1024).toFixed(1)}`).join(', ')})`,
    );
    expect(sizes.find(([name]) => name === 'uPlot.js')![1]).toBeGreaterThan(10_000); // the library is really counted
    expect(total).toBeLessThan(BUDGET_BYTES);
  });

  it('are exactly what the page references', () => {
    const html = readFileSync(ASSETS['index.html']!.file(), 'utf8');
    const referenced = [...html.matchAll(/(?:src|href)="\/console\/assets\/([^"]+)"/g)].map((m) => m[1]);
    expect(new Set(referenced)).toEqual(new Set(Object.keys(ASSETS).filter((name) => name !== 'index.html')));
    // No third-party origin: the page works offline and under its content security policy.
    expect(html).not.toMatch(/(?:src|href)="https?:/);
  });
});
