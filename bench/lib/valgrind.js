/**
 * What the instruction counters (bench/instructions.js, bench/wire-instructions.js) share: whether
 * valgrind is here, how to read a counter from cachegrind's summary, and the node flags that make a count repeatable — no concurrent compiler or GC
 * threads, a fixed 16 MB semi-space, and an old space large enough that no major GC starts inside
 * the measured window (docs/performance.md, "Instructions counted").
 */
import { spawnSync } from 'node:child_process';

export const COUNTING_NODE_FLAGS =
  '--predictable --expose-gc --min-semi-space-size=16 --max-semi-space-size=16 --initial-old-space-size=512';

export function hasValgrind() {
  return spawnSync('valgrind', ['--version']).status === 0;
}

/**
 * One counter from cachegrind's summary on stderr (`==123== I   refs:  500,462,039`), by the name it
 * prints with single spaces ('I refs', 'I1 misses', 'D1 misses', 'LL misses'); undefined when absent.
 * A name matches only whole ('LL misses' is not 'LLi misses'). Read it after the process's 'close':
 * at 'exit' the summary's last lines may still be in the pipe.
 */
export function cachegrindCounter(stderr, name) {
  const found = new RegExp(`(?:^|\\s)${name.replaceAll(' ', '\\s+')}:\\s+([\\d,]+)`, 'm').exec(stderr);
  return found ? Number(found[1].replaceAll(',', '')) : undefined;
}
