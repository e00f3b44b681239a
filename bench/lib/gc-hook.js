/**
 * Preloaded into the gateway for the memory scenario only (`node --expose-gc --import …`):
 * SIGUSR2 runs a full garbage collection and writes process.memoryUsage() to the file named by
 * RCPGW_BENCH_MEMFILE, so memory is compared between two collected heaps instead of depending
 * on how much garbage the warm-up happened to leave behind.
 */
import { renameSync, writeFileSync } from 'node:fs';

process.on('SIGUSR2', () => {
  globalThis.gc?.();
  const file = process.env.RCPGW_BENCH_MEMFILE;
  if (!file) return;
  writeFileSync(`${file}.tmp`, JSON.stringify({ at: Date.now(), ...process.memoryUsage() }));
  renameSync(`${file}.tmp`, file); // the reader never sees half a report
});
