/**
 * `rcp-gateway eval --html FILE`: the evaluation as one self-contained HTML page (no script, no
 * external resource): the per-arm metric table, the paired comparisons with their p-values, and
 * for each compared arm and metric a per-query difference plot (inline SVG: one bar per judged
 * query, arm minus baseline, sorted, so the share of queries helped and hurt reads at a glance).
 */
import type { EvalSummary } from './report.js';
import type { ArmScores, Comparison, Metric } from './scoring.js';

const PLOT_WIDTH = 720;
const PLOT_HEIGHT = 140;

const escapeHtml = (text: string): string =>
  text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
const fixed = (x: number): string => x.toFixed(4);
const signed = (x: number): string => `${x >= 0 ? '+' : ''}${x.toFixed(4)}`;
const pValue = (p: number): string => (p < 0.0001 ? '&lt;0.0001' : p.toFixed(4));

function table(header: string[], rows: string[][]): string {
  const head = header.map((h) => `<th>${h}</th>`).join('');
  const body = rows.map((row) => `<tr>${row.map((cell) => `<td>${cell}</td>`).join('')}</tr>`).join('\n');
  return `<table><thead><tr>${head}</tr></thead><tbody>\n${body}\n</tbody></table>`;
}

/** Bars of arm − baseline per query, sorted descending; y = 0 in the middle of the range. */
export function differencePlot(differences: ReadonlyArray<{ qid: string; delta: number }>): string {
  const sorted = [...differences].sort((a, b) => b.delta - a.delta);
  const extent = Math.max(1e-9, ...sorted.map((d) => Math.abs(d.delta)));
  const barWidth = PLOT_WIDTH / Math.max(1, sorted.length);
  const zero = PLOT_HEIGHT / 2;
  const bars = sorted
    .map((d, i) => {
      const height = (Math.abs(d.delta) / extent) * (PLOT_HEIGHT / 2 - 4);
      const y = d.delta >= 0 ? zero - height : zero;
      const fill = d.delta > 0 ? '#2f855a' : d.delta < 0 ? '#c53030' : '#a0aec0';
      return `<rect x="${(i * barWidth).toFixed(2)}" y="${y.toFixed(2)}" width="${Math.max(0.5, barWidth - 0.5).toFixed(2)}" height="${Math.max(0.5, height).toFixed(2)}" fill="${fill}"><title>query ${escapeHtml(d.qid)}: ${signed(d.delta)}</title></rect>`;
    })
    .join('');
  return (
    `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${PLOT_WIDTH} ${PLOT_HEIGHT}" width="${PLOT_WIDTH}" height="${PLOT_HEIGHT}" role="img">` +
    `<line x1="0" x2="${PLOT_WIDTH}" y1="${zero}" y2="${zero}" stroke="#718096" stroke-width="0.5"/>${bars}` +
    `<text x="4" y="12" font-size="10" fill="#4a5568">+${extent.toFixed(3)}</text>` +
    `<text x="4" y="${PLOT_HEIGHT - 4}" font-size="10" fill="#4a5568">−${extent.toFixed(3)}</text></svg>`
  );
}

function comparisonSection(comparison: Comparison, arm: ArmScores, base: ArmScores, queryIds: readonly string[]): string {
  const a = arm.perQuery[comparison.metric];
  const b = base.perQuery[comparison.metric];
  const differences = queryIds.map((qid, i) => ({ qid, delta: (a[i] ?? 0) - (b[i] ?? 0) }));
  const title = `${escapeHtml(comparison.arm)} − ${escapeHtml(comparison.baseline)}: ${escapeHtml(comparison.label)}`;
  const summary = `Δ ${signed(comparison.delta)}, p ${pValue(comparison.pRandomisation)} (randomisation), ${comparison.wins} better / ${comparison.losses} worse / ${comparison.ties} tied`;
  return `<figure><figcaption><b>${title}</b> — ${summary}</figcaption>${differencePlot(differences)}</figure>`;
}

const STYLE = `body{font:14px/1.45 system-ui,sans-serif;margin:2em;color:#1d2330}table{border-collapse:collapse;margin:1em 0}
th,td{padding:.25em .7em;border-bottom:1px solid #e2e5eb;text-align:right}th:first-child,td:first-child{text-align:left}
figure{margin:1.2em 0}figcaption{margin-bottom:.3em}.muted{color:#6b7385}`;

export function evalHtml(summary: EvalSummary, queryIds: readonly string[]): string {
  const { metrics } = summary;
  const armRows = summary.scores.map((s) => [
    escapeHtml(s.arm),
    ...metrics.map((m: Metric) => fixed(s.means[m.key])),
    String(summary.failures.get(s.arm)?.length ?? 0),
  ]);
  const comparisonRows = summary.comparisons.map((c) => [
    escapeHtml(c.arm),
    escapeHtml(c.label),
    signed(c.delta),
    pValue(c.pRandomisation),
    pValue(c.pTTest),
    `${c.wins}/${c.losses}/${c.ties}`,
  ]);
  const byArm = new Map(summary.scores.map((s) => [s.arm, s]));
  const base = byArm.get(summary.baseline)!;
  const plots = summary.comparisons.map((c) => comparisonSection(c, byArm.get(c.arm)!, base, queryIds)).join('\n');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>rcp-gateway eval: ${escapeHtml(summary.collection)}</title><style>${STYLE}</style></head>
<body>
<h1>Evaluation: ${escapeHtml(summary.collection)}</h1>
<p class="muted">${summary.evaluated} of ${summary.queries} queries judged, k = ${summary.k}, baseline “${escapeHtml(summary.baseline)}”; randomisation test ${summary.trials} trials, seed ${summary.seed}; two-sided paired t-test.</p>
<h2>Arms</h2>
${table(['arm', ...metrics.map((m) => escapeHtml(m.label)), 'failed'], armRows)}
${summary.comparisons.length > 0 ? `<h2>Paired against “${escapeHtml(summary.baseline)}”</h2>\n${table(['arm', 'metric', 'delta', 'p (randomisation)', 'p (t-test)', 'wins/losses/ties'], comparisonRows)}\n<h2>Per-query differences</h2>\n<p class="muted">One bar per judged query, arm minus baseline, sorted; green: the arm did better, red: worse.</p>\n${plots}` : ''}
</body></html>
`;
}
