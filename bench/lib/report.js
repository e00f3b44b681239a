/**
 * What a run prints and what it appends to bench/RESULTS.md: one row per scenario, the ratios
 * against their targets, and the machine the figures came from.
 */
import { appendFileSync, existsSync, writeFileSync } from 'node:fs';
import os from 'node:os';

export const TARGETS = {
  'B÷A': { min: 0.5, what: 'throughput, gateway hop vs engine direct (1 worker)' },
  'B÷D1': { min: 0.8, what: 'throughput, gateway passthrough vs bare proxy ceiling' },
  'C÷D': { min: 0.8, what: 'throughput, full gateway vs bare ceiling' },
  'B÷F1': { min: 0.8, what: 'throughput, gateway passthrough vs the spec floor (bare proxy + what RCP/1 requires)' },
  'C÷F': { min: 0.8, what: 'throughput, full gateway vs the spec floor over 3 engines' },
  'C 2w÷1w': { min: 1.7, what: 'throughput, 2 workers vs 1' },
  'fusion÷parse': { max: 0.2, what: 'RRF 5×1000 time vs JSON.parse of the same hits' },
  'KB per SSE stream': { max: 50, what: 'gateway RSS per open SSE stream' },
};

export function machine() {
  const cpus = os.cpus();
  return {
    cpu: cpus[0]?.model.trim() ?? 'unknown',
    cores: os.availableParallelism?.() ?? cpus.length,
    memory: `${Math.round(os.totalmem() / 2 ** 30)} GiB`,
    node: process.version,
    os: `${os.type()} ${os.release()} ${os.arch()}`,
    date: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
    loadavg: os
      .loadavg()
      .map((x) => x.toFixed(2))
      .join(' '),
  };
}

const fmt = (x, digits = 0) => (typeof x === 'number' && Number.isFinite(x) ? x.toFixed(digits) : 'n/a');

export function verdict(name, value) {
  const target = TARGETS[name];
  if (!target || !Number.isFinite(value)) return 'n/a';
  if (target.min !== undefined) return value >= target.min ? 'met' : `missed (${fmt((value / target.min) * 100)} % of target)`;
  return value <= target.max ? 'met' : `missed (${fmt((value / target.max) * 100)} % of the limit)`;
}

export function targetText(name) {
  const target = TARGETS[name];
  return target.min !== undefined ? `≥ ${target.min}` : `≤ ${target.max}`;
}

const HEAD = ['scenario', 'req/s', 'p50 ms', 'p99 ms', 'p99.9 ms', 'latency at req/s', 'server CPU µs/req', 'bad answers'];

export function rowsOf(results) {
  return results.map((r) =>
    r.error
      ? [r.label, 'failed', '', '', '', '', '', r.error.split('\n')[0].slice(0, 80)]
      : [r.label, fmt(r.rps), fmt(r.p50, 2), fmt(r.p99, 2), fmt(r.p999, 2), fmt(r.offered), fmt(r.cpuUsPerReq), String(r.bad)],
  );
}

export function printTable(rows) {
  const all = [HEAD, ...rows];
  const widths = HEAD.map((_, i) => Math.max(...all.map((row) => String(row[i]).length)));
  const line = (row) => row.map((cell, i) => (i === 0 ? String(cell).padEnd(widths[i]) : String(cell).padStart(widths[i]))).join('  ');
  return [line(HEAD), ...rows.map(line)].join('\n');
}

export function ratioLines(ratios) {
  return Object.keys(TARGETS).map((name) => {
    const value = ratios[name];
    const digits = name === 'KB per SSE stream' ? 1 : name === 'fusion÷parse' ? 3 : 2;
    return { name, value: fmt(value, digits), target: targetText(name), verdict: verdict(name, value), what: TARGETS[name].what };
  });
}

export function appendResults(file, { label, info, rows, ratios, extra, settings }) {
  if (!existsSync(file)) {
    writeFileSync(
      file,
      '# Benchmark results\n\nAppended by `npm run bench` (newest last). See docs/performance.md for what each figure means.\n',
    );
  }
  const md = [];
  md.push('', `## ${info.date}${label ? ` — ${label}` : ''}`, '');
  md.push(
    `Machine: ${info.cpu}, ${info.cores} cores, ${info.memory}; Node ${info.node}; ${info.os}; load average at start ${info.loadavg}.`,
  );
  md.push(`Settings: ${settings}.`, '');
  md.push(`| ${HEAD.join(' | ')} |`, `|${HEAD.map((_, i) => (i === 0 ? ' --- ' : ' ---: ')).join('|')}|`);
  for (const row of rows) md.push(`| ${row.join(' | ')} |`);
  md.push('', '| ratio | value | target | verdict |', '| --- | ---: | ---: | --- |');
  for (const r of ratioLines(ratios)) md.push(`| ${r.name} (${r.what}) | ${r.value} | ${r.target} | ${r.verdict} |`);
  if (extra.length > 0) md.push('', ...extra.map((line) => `- ${line}`));
  appendFileSync(file, `${md.join('\n')}\n`);
}
