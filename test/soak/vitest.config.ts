import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

/**
 * The soak tier (`npm run test:soak`, run by CI after `npm test`): long, load-heavy runs that
 * check the system holds up over time rather than one behaviour. One file at a time, so a load
 * run measures the gateway and not its neighbours.
 */
export default defineConfig({
  root: path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..'),
  test: {
    include: ['test/soak/**/*.test.ts'],
    globalSetup: ['test/setup/dist.ts'],
    testTimeout: 120_000,
    hookTimeout: 60_000,
    pool: 'forks',
    fileParallelism: false,
    reporters: ['default'],
  },
});
