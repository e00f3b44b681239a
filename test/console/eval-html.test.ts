/**
 * `rcp-gateway eval --html FILE`: beside the usual tables, a self-contained HTML report with the
 * metric tables and one per-query difference plot per compared arm and metric. Two TREC run files
 * over a three-query judged set, so the figures can be checked by hand.
 */
import { execFile } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { differencePlot } from '../../src/evaluation/html-report.js';
import { GATEWAY_CLI, REPO_ROOT, tmpDir } from '../support/processes.js';

function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [GATEWAY_CLI, 'eval', ...args], { cwd: REPO_ROOT }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr });
    });
  });
}

describe('eval --html', () => {
  it('writes tables and per-query difference plots next to the text output', async () => {
    const dir = tmpDir('rcp-eval-html-');
    const file = (name: string, text: string): string => {
      writeFileSync(path.join(dir, name), text);
      return path.join(dir, name);
    };
    const queries = file('queries.tsv', 'q1\tfirst <query>\nq2\tsecond\nq3\tthird\n');
    const qrels = file('qrels.txt', 'q1 0 d1 1\nq2 0 d2 1\nq3 0 d3 1\n');
    // "base" finds every relevant document at rank 2; "better" at rank 1 for q1 and q2, nowhere for q3.
    const base = file(
      'base.run',
      ['q1 Q0 x 1 2 base', 'q1 Q0 d1 2 1 base', 'q2 Q0 x 1 2 base', 'q2 Q0 d2 2 1 base', 'q3 Q0 x 1 2 base', 'q3 Q0 d3 2 1 base'].join(
        '\n',
      ),
    );
    const better = file('better.run', ['q1 Q0 d1 1 2 better', 'q2 Q0 d2 1 2 better', 'q3 Q0 x 1 2 better'].join('\n'));
    const html = path.join(dir, 'report.html');
    const out = await cli([
      '--queries',
      queries,
      '--qrels',
      qrels,
      '--run',
      base,
      '--run',
      `better<b>=${better}`,
      '--trials',
      '200',
      '--html',
      html,
    ]);
    expect(out.stderr).toBe('');
    expect(out.code).toBe(0);
    expect(out.stdout).toContain('MRR'); // the text tables are still printed
    const report = readFileSync(html, 'utf8');
    expect(report.startsWith('<!doctype html>')).toBe(true);
    expect(report).not.toMatch(/<script|<link|https?:\/\/(?!www\.w3\.org)/); // self-contained
    expect(report).toContain('better&lt;b&gt;'); // names are escaped
    expect(report).not.toContain('better<b>');
    // One figure per compared arm and metric (five metrics), each a bar per judged query.
    expect(report.match(/<figure>/g)).toHaveLength(5);
    // MRR: base ½ on every query; better 1, 1, 0: Δ = ⅔ − ½, two queries better, one worse.
    const mrr = /<figcaption><b>better&lt;b&gt; − base: MRR<\/b> — Δ ([^,]+),[^<]*?(\d+) better \/ (\d+) worse \/ (\d+) tied/.exec(report);
    expect(mrr?.slice(1)).toEqual(['+0.1667', '2', '1', '0']);
    expect(report.match(/<rect /g)).toHaveLength(15); // 5 plots × 3 queries
  });

  it('plots bars sorted from the largest gain to the largest loss', () => {
    const svg = differencePlot([
      { qid: 'a', delta: -0.5 },
      { qid: 'b', delta: 1 },
      { qid: 'c', delta: 0 },
    ]);
    const titles = [...svg.matchAll(/<title>query (\w+): ([^<]+)<\/title>/g)].map((m) => [m[1], m[2]]);
    expect(titles).toEqual([
      ['b', '+1.0000'],
      ['c', '+0.0000'],
      ['a', '-0.5000'],
    ]);
    expect(svg.match(/fill="#2f855a"/g)).toHaveLength(1);
    expect(svg.match(/fill="#c53030"/g)).toHaveLength(1);
  });

  it('is refused with --tune (exit 2)', async () => {
    const out = await cli(['--tune', '--html', path.join(tmpDir('rcp-eval-html-'), 'x.html')]);
    expect(out.code).toBe(2);
    expect(out.stderr).toContain('--html');
  });
});
