/**
 * Helpers for the observability suites: a Prometheus text-exposition parser, the gateway's JSON
 * log lines, plain HTTP GETs of the ops endpoints, and a bounded poll (for state that changes
 * without an event the test can subscribe to, e.g. a scrape value or an engine restart).
 */
import { spawn } from 'node:child_process';
import { fetch } from 'undici';
import { GATEWAY_CLI, REPO_ROOT } from '../support/processes.js';

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** Parse the text exposition format (v0.0.4): one sample per non-comment line. */
export function parseExposition(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\d+)?$/.exec(line);
    if (!m) throw new Error(`unparseable exposition line: ${line}`);
    const labels: Record<string, string> = {};
    if (m[2]) {
      for (const pair of m[2].matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) {
        labels[pair[1]!] = pair[2]!.replace(/\\n/g, '\n').replace(/\\"/g, '"').replace(/\\\\/g, '\\');
      }
    }
    const raw = m[3]!;
    const value = raw === '+Inf' ? Infinity : raw === '-Inf' ? -Infinity : Number(raw);
    samples.push({ name: m[1]!, labels, value });
  }
  return samples;
}

/** Sum of the samples named `name` whose labels include `labels` (0 when none match). */
export function metricValue(samples: readonly Sample[], name: string, labels: Record<string, string> = {}): number {
  let total = 0;
  for (const sample of samples) {
    if (sample.name !== name) continue;
    if (Object.entries(labels).every(([k, v]) => sample.labels[k] === v)) total += sample.value;
  }
  return total;
}

export async function get(url: string): Promise<{ status: number; contentType: string; text: string }> {
  const res = await fetch(url);
  return { status: res.status, contentType: res.headers.get('content-type') ?? '', text: await res.text() };
}

/** `http://h:p/rcp` → `http://h:p` */
export function origin(rcpUrl: string): string {
  return new URL(rcpUrl).origin;
}

export async function scrape(baseOrigin: string): Promise<Sample[]> {
  const res = await get(`${baseOrigin}/metrics`);
  if (res.status !== 200) throw new Error(`/metrics answered ${res.status}`);
  return parseExposition(res.text);
}

/** The JSON log lines a gateway wrote to stderr (non-JSON lines skipped). */
export function logLines(stderr: string): Array<Record<string, unknown>> {
  const out: Array<Record<string, unknown>> = [];
  for (const line of stderr.split('\n')) {
    if (!line.startsWith('{')) continue;
    try {
      out.push(JSON.parse(line) as Record<string, unknown>);
    } catch {
      /* a line still being written */
    }
  }
  return out;
}

/** Poll `check` until it returns a value that is not undefined; rejects after `timeoutMs`. */
export async function until<T>(what: string, check: () => Promise<T | undefined> | T | undefined, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined) return value;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ''}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** Run the gateway CLI to completion; resolves with exit code and output. */
export function runCli(args: string[], timeoutMs = 20_000): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [GATEWAY_CLI, ...args], { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => {
      stdout += c;
    });
    child.stderr.setEncoding('utf8').on('data', (c: string) => {
      stderr += c;
    });
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`rcp-gateway ${args.join(' ')} did not finish in ${timeoutMs} ms\n${stderr}`));
    }, timeoutMs);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}
