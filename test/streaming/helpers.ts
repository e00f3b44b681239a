/**
 * Shared pieces of the streaming suites: process bookkeeping, the raw-SSE fixture engine, a
 * gateway over stdio, and an independent reciprocal rank fusion to check `partial.hits` against.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { rpc } from '../support/http-client.js';
import { GATEWAY_CLI, REPO_ROOT, stopChild, tmpDir, trackChild, writeConfig } from '../support/processes.js';
import { StdioClient } from '../support/stdio-client.js';

export const RAW_SSE_ENGINE = path.join(REPO_ROOT, 'test/streaming/fixtures/raw-sse-engine.mjs');

/** Cleanups run in reverse order by the suite's afterAll. */
export const cleanups: Array<() => Promise<unknown>> = [];

export async function runCleanups(): Promise<void> {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
}

/** The raw-SSE fixture engine (see fixtures/raw-sse-engine.mjs) on an ephemeral port. */
export async function startRawSseEngine(style: 'tricky' | 'no-final', id: string): Promise<{ url: string }> {
  const proc = spawn(process.execPath, [RAW_SSE_ENGINE, '--style', style, '--id', id], { stdio: ['ignore', 'pipe', 'inherit'] });
  trackChild(proc);
  cleanups.push(() => stopChild(proc));
  const port = await new Promise<number>((resolve, reject) => {
    let out = '';
    proc.stdout.setEncoding('utf8');
    proc.stdout.on('data', (chunk: string) => {
      out += chunk;
      const m = out.match(/\{"listening":(\d+)\}/);
      if (m) resolve(Number(m[1]));
    });
    proc.once('exit', (code) => reject(new Error(`raw-sse engine exited (${code}) before listening`)));
  });
  return { url: `http://127.0.0.1:${port}/rcp` };
}

/** `rcp-gateway stdio --config FILE`, initialized; `capabilities`/`meta` go into initialize. */
export async function startStdioGateway(
  config: unknown,
  init: { capabilities?: Record<string, unknown>; meta?: Record<string, unknown> } = {},
): Promise<StdioClient> {
  const file = writeConfig(tmpDir('rcp-stream-'), config);
  const client = new StdioClient([process.execPath, GATEWAY_CLI, 'stdio', '--config', file]);
  cleanups.push(() => client.close());
  const reply = await client.request('initialize', {
    protocolVersion: 1,
    client: { name: 'streaming-test', version: '1' },
    capabilities: init.capabilities ?? {},
    ...(init.meta ? { _meta: init.meta } : {}),
  });
  if (reply.error) throw new Error(`initialize failed: ${JSON.stringify(reply.error)}`);
  return client;
}

export interface PlainHit {
  id: string | number;
  score: number;
}

/** An engine's own answer, asked directly (the test engines are deterministic). */
export async function engineAnswer(url: string, params: Record<string, unknown>): Promise<PlainHit[]> {
  const reply = await rpc<{ hits: PlainHit[] }>(url, 'retrieve', params, { validate: false });
  if (!reply.result) throw new Error(`engine answered ${JSON.stringify(reply.error)}`);
  return reply.result.hits;
}

/**
 * Reciprocal rank fusion written from §16.3 alone: Σ w/(rrfK + rank) over the engines (in
 * engine-id order), ties by fused score, then summed weight, then the smaller stringified id.
 * Returns the fused ids, best first, at most `k`.
 */
export function rrfIds(lists: Array<{ engine: string; weight?: number; hits: PlainHit[] }>, k: number, rrfK = 60): string[] {
  const byId = new Map<string, { fused: number; weight: number }>();
  for (const list of [...lists].sort((a, b) => (a.engine < b.engine ? -1 : 1))) {
    const weight = list.weight ?? 1;
    list.hits.forEach((hit, index) => {
      const key = String(hit.id);
      const entry = byId.get(key) ?? { fused: 0, weight: 0 };
      entry.fused += weight / (rrfK + index + 1);
      entry.weight += weight;
      byId.set(key, entry);
    });
  }
  return [...byId.entries()]
    .sort(([ia, a], [ib, b]) => b.fused - a.fused || b.weight - a.weight || (ia < ib ? -1 : ia > ib ? 1 : 0))
    .slice(0, k)
    .map(([id]) => id);
}
