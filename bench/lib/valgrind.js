/**
 * What the instruction counters (bench/instructions.js, bench/wire-instructions.js) share: whether
 * valgrind is here, and the node flags that make a count repeatable — no concurrent compiler or GC
 * threads, a fixed 16 MB semi-space, and an old space large enough that no major GC starts inside
 * the measured window (docs/performance.md, "Instructions counted").
 */
import { spawnSync } from 'node:child_process';

export const COUNTING_NODE_FLAGS =
  '--predictable --expose-gc --min-semi-space-size=16 --max-semi-space-size=16 --initial-old-space-size=512';

export function hasValgrind() {
  return spawnSync('valgrind', ['--version']).status === 0;
}
