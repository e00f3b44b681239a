/**
 * Summarise a V8 .cpuprofile (from `node --cpu-prof`): self time per function and per package
 * or source file, highest first. Self time is what a function spends in its own code, not in
 * what it calls: the list says where the CPU actually goes.
 *
 *   node bench/lib/cpuprofile.js FILE.cpuprofile [--top 30]
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';

/** Where a frame's code lives: `pkg:<name>` for node_modules, the repo-relative file otherwise. */
function origin(url) {
  if (!url) return '(native/vm)';
  if (url.startsWith('node:')) return url;
  const nm = url.lastIndexOf('/node_modules/');
  if (nm >= 0) {
    const rest = url.slice(nm + 14).split('/');
    return `pkg:${rest[0].startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0]}`;
  }
  const dist = url.indexOf('/dist/');
  return dist >= 0 ? url.slice(dist + 1) : url.replace(/^file:\/\//, '');
}

export function summarize(profile) {
  const { nodes, samples, timeDeltas } = profile;
  const byId = new Map(nodes.map((node) => [node.id, node]));
  const selfUs = new Map();
  for (let i = 0; i < samples.length; i++) selfUs.set(samples[i], (selfUs.get(samples[i]) ?? 0) + (timeDeltas[i] ?? 0));
  let total = 0;
  const byFunction = new Map();
  const byOrigin = new Map();
  for (const [id, us] of selfUs) {
    const frame = byId.get(id).callFrame;
    total += us;
    const name = `${frame.functionName || '(anonymous)'} ${origin(frame.url)}:${frame.lineNumber + 1}`;
    byFunction.set(name, (byFunction.get(name) ?? 0) + us);
    const where = origin(frame.url);
    byOrigin.set(where, (byOrigin.get(where) ?? 0) + us);
  }
  // Inclusive ("total") time: a node's own samples plus its subtree's, counted once per function
  // per stack so recursion does not inflate it.
  const parentOf = new Map();
  for (const node of nodes) for (const child of node.children ?? []) parentOf.set(child, node.id);
  const byFunctionTotal = new Map();
  for (const [id, us] of selfUs) {
    const seen = new Set();
    for (let at = id; at !== undefined; at = parentOf.get(at)) {
      const frame = byId.get(at).callFrame;
      const name = `${frame.functionName || '(anonymous)'} ${origin(frame.url)}:${frame.lineNumber + 1}`;
      if (seen.has(name)) continue;
      seen.add(name);
      byFunctionTotal.set(name, (byFunctionTotal.get(name) ?? 0) + us);
    }
  }
  const top = (map) => [...map].sort((a, b) => b[1] - a[1]).map(([name, us]) => ({ name, ms: us / 1000, share: us / total }));
  return { totalMs: total / 1000, functions: top(byFunction), origins: top(byOrigin), inclusive: top(byFunctionTotal) };
}

export function formatSummary(summary, n = 30) {
  const line = (row) => `${(row.share * 100).toFixed(1).padStart(5)} %  ${row.ms.toFixed(0).padStart(7)} ms  ${row.name}`;
  return [
    `total sampled: ${summary.totalMs.toFixed(0)} ms`,
    '',
    `top ${n} functions by self time:`,
    ...summary.functions.slice(0, n).map(line),
    '',
    'self time by package / file:',
    ...summary.origins.slice(0, 20).map(line),
    '',
    `top ${n} functions by total (inclusive) time:`,
    ...summary.inclusive
      .filter((row) => !row.name.startsWith('('))
      .slice(0, n)
      .map(line),
  ].join('\n');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { values, positionals } = parseArgs({ allowPositionals: true, options: { top: { type: 'string', default: '30' } } });
  if (positionals.length === 0) {
    process.stderr.write('usage: node bench/lib/cpuprofile.js FILE.cpuprofile [--top N]\n');
    process.exit(2);
  }
  for (const file of positionals) {
    process.stdout.write(`${file}\n${formatSummary(summarize(JSON.parse(readFileSync(file, 'utf8'))), Number(values.top))}\n\n`);
  }
}
