import os from 'node:os';
import { defineConfig } from 'vitest/config';

/**
 * One worker per core when the machine is free (vitest's default on 2 cores is 1): end-to-end
 * files spend much of their time waiting on child processes, sockets and timers, which a second
 * file fills. On a machine already busy (load above its core count) a second file only starves
 * the first one's processes, so then one at a time. `--maxWorkers=N` overrides either.
 */
const cores = os.availableParallelism();
// Decided once per run and inherited by every evaluation of this file: with the load average near
// the core count, one CI run's projects came out with different worker counts (vitest refuses
// that within one group).
process.env.RCPGW_TEST_WORKERS ??= String(os.loadavg()[0] < cores ? cores : 1);
const maxWorkers = Number(process.env.RCPGW_TEST_WORKERS);

/**
 * Two tiers, one run (`npm test`):
 * - in-process: pure units and the gateway over fake engines (test/inprocess, in-memory
 *   transport, fake timers): no process, no socket, no build.
 * - e2e: the real processes (gateway from dist/, test engines over HTTP and stdio, the edge
 *   runtimes on dist-edge/). Its global setups rebuild dist/ and dist-edge/ when they are older
 *   than src/, so `npx vitest run test/x` never runs stale code.
 * Soaks and load runs live in test/soak with their own config (`npm run test:soak`).
 */
const IN_PROCESS = [
  'test/unit/**/*.test.ts',
  'test/experiments/inprocess/**/*.test.ts',
  'test/inprocess/**/*.test.ts',
  'test/observability/pure.test.ts',
  'test/resilience/units.test.ts',
  'test/streaming/http-sessions.test.ts',
  'test/auth/units.test.ts',
];

/**
 * Files that replace a module with `vi.mock`. In a worker that reuses modules, whether a mock takes
 * hold can depend on what an earlier file loaded: the hostile-engine suite's settle counter saw no
 * reader at all in one clean-clone run (its calls ran; the real, uncounting reader served them).
 */
const MOCKS_MODULES = ['test/upstream/hostile-engine.test.ts'];

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    maxWorkers,
    // Files reuse their worker's process and modules instead of a fresh fork and fresh imports
    // each: no test file here patches globals or leaves fake timers installed, the one shared
    // collector is reset per file (test/setup/per-file.ts), and the files that mock a module run
    // in a project of their own with fresh imports (MOCKS_MODULES above).
    isolate: false,
    reporters: ['default'],
    projects: [
      { extends: true, test: { name: 'in-process', include: IN_PROCESS } },
      {
        extends: true,
        test: {
          name: 'e2e',
          include: ['test/**/*.test.ts'],
          exclude: [...IN_PROCESS, ...MOCKS_MODULES, 'test/soak/**', '**/node_modules/**'],
          globalSetup: ['test/setup/dist.ts', 'test/setup/edge-dist.ts'],
          setupFiles: ['test/setup/per-file.ts'],
        },
      },
      {
        extends: true,
        test: {
          name: 'e2e-isolated',
          include: MOCKS_MODULES,
          isolate: true,
          // Its own group, after the others: a project of its own worker settings must not share one.
          maxWorkers: 1,
          sequence: { groupOrder: 1 },
          globalSetup: ['test/setup/dist.ts', 'test/setup/edge-dist.ts'],
          setupFiles: ['test/setup/per-file.ts'],
        },
      },
    ],
  },
});
