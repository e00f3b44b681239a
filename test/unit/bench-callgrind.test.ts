/**
 * The callgrind dump reader behind `bench/wire-instructions.js --profile` (bench/lib/callgrind.js):
 * self costs per function and origin, JIT code named from a perf map, every event column of a
 * dump taken with the cache simulation, checked on a dump written by hand in callgrind's format.
 */
import { describe, expect, it } from 'vitest';
import { summarizeCallgrind } from '../../bench/lib/callgrind.js';

// Two requests' worth. Positions are `instr line`; addresses are absolute (0x…), relative (+/-) or
// the same (*); a cost line may stop before its last events (they are zero); the line after
// `calls=` is the callee's inclusive cost and belongs to the callee, not the caller.
const DUMP = [
  'version: 1',
  'positions: instr line',
  'events: Ir Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw',
  'fn=(1) Builtins_JsonStringifier',
  '0x1000 0 100 10 5 4 2 1 1',
  '+8 0 60 0 0 2',
  'fn=(2) v8::internal::Heap::Scavenge',
  '0x2000 0 40 4 4 6 0 0 0 0 3',
  'cfn=(1)',
  'calls=1 0x1000 0',
  '* 0 500 50 50 50 50 50 50 50 50',
  '0x5000 0 20',
  '0x5008 0 10 0 0 0 1',
  '-4 0 10',
].join('\n');
// 0x5000–0x500f is one JIT code object of the gateway.
const PERF_MAP = '5000 10 JS:*federatedRetrieve file:///srv/app/dist/core/federation/retrieve.js:14:40\n';

describe('callgrind summary', () => {
  const summary = summarizeCallgrind(DUMP, PERF_MAP, 2);

  it('counts self instructions per request, by function and origin, JIT code by its perf map name', () => {
    expect(summary.total).toBe((100 + 60 + 40 + 20 + 10 + 10) / 2);
    expect(summary.functions[0]).toEqual(['Builtins_JsonStringifier', 80]);
    expect(new Map(summary.functions)).toEqual(
      new Map([
        ['Builtins_JsonStringifier', 80],
        ['JS:*federatedRetrieve file:///srv/app/dist/core/federation/retrieve.js:14:40', 20],
        ['v8::internal::Heap::Scavenge', 20],
      ]),
    );
    expect(new Map(summary.origins)).toEqual(
      new Map([
        ['V8 builtins (inline caches, object and array operations)', 80],
        ['gateway core/federation', 20],
        ['V8 garbage collector', 20],
      ]),
    );
  });

  it('reads every event column, treating the ones a line leaves out as zero', () => {
    expect([...summary.events.keys()]).toEqual(['Ir', 'Dr', 'Dw', 'I1mr', 'D1mr', 'D1mw', 'ILmr', 'DLmr', 'DLmw']);
    expect(new Map(summary.events.get('I1mr')!.functions)).toEqual(
      new Map([
        ['Builtins_JsonStringifier', 3],
        ['v8::internal::Heap::Scavenge', 3],
      ]),
    );
    expect(summary.events.get('D1mr')!.functions).toEqual([
      ['Builtins_JsonStringifier', 1],
      ['JS:*federatedRetrieve file:///srv/app/dist/core/federation/retrieve.js:14:40', 0.5],
    ]);
    expect(summary.events.get('DLmw')!.functions).toEqual([['v8::internal::Heap::Scavenge', 1.5]]);
    // The callee's inclusive line (500 …) is nowhere.
    for (const { functions } of summary.events.values()) for (const [, n] of functions) expect(n).toBeLessThan(250);
  });
});
