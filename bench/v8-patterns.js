#!/usr/bin/env node
/**
 * The per-object costs behind two CPU-diet rules (docs/performance.md, "CPU diet"), measured on
 * the running Node in one process, so a newer runtime that drops the slow paths shows it:
 *
 * - an object literal that opens with a spread and then adds a key the source lacks
 *   (`{ ...hit, meta }`) against a spread that only overwrites keys and a key-by-key copy then
 *   set (`shallowCopy`, src/core/protocol/copy.ts);
 * - an AbortController with one listener per request against a `Cancellation`
 *   (src/core/service/cancellation.ts).
 *
 *   npm run build && node bench/v8-patterns.js [--iterations 2000000]
 */
import { parseArgs } from 'node:util';
import { shallowCopy } from '../dist/core/protocol/copy.js';
import { Cancellation } from '../dist/core/service/cancellation.js';
import { cannedHits } from './lib/canned-hits.js';

const { values } = parseArgs({ options: { iterations: { type: 'string', default: '2000000' } } });
const N = Number(values.iterations);
const hits = JSON.parse(JSON.stringify(cannedHits(0, 20)));
// Every object made is stored here (overwritten in turn), so none can be optimised away.
const kept = new Array(1024);

function measure(name, fn) {
  for (let i = 0; i < Math.min(N, 50_000); i++) kept[i & 1023] = fn(hits[i % 20], i);
  const started = performance.now();
  for (let i = 0; i < N; i++) kept[i & 1023] = fn(hits[i % 20], i);
  const us = ((performance.now() - started) * 1000) / N;
  process.stdout.write(`${name.padEnd(58)} ${us.toFixed(3)} µs\n`);
  return us;
}

process.stdout.write(`Node ${process.version}, ${N} objects each\n`);
const overwrite = measure('{ ...hit, score } (the source has `score`)', (hit, i) => ({ ...hit, score: i }));
const added = measure('{ ...hit, meta } (a key the source lacks)', (hit, i) => ({ ...hit, meta: i }));
const copied = measure('shallowCopy(hit), then .meta = …', (hit, i) => {
  const out = shallowCopy(hit);
  out.meta = i;
  return out;
});
const noop = () => undefined;
const controller = measure('AbortController + a listener added and removed', () => {
  const c = new AbortController();
  c.signal.addEventListener('abort', noop, { once: true });
  c.signal.removeEventListener('abort', noop);
  return c;
});
const cancellation = measure('Cancellation + a listener added and removed', () => {
  const c = new Cancellation();
  c.signal.addEventListener('abort', noop);
  c.signal.removeEventListener('abort', noop);
  return c;
});
process.stdout.write(
  `spread with a new key ÷ copy then set: ${(added / copied).toFixed(1)} (overwrite only: ${(overwrite / copied).toFixed(1)}); ` +
    `AbortController ÷ Cancellation: ${(controller / cancellation).toFixed(1)}\n`,
);
