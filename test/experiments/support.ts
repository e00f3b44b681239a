/**
 * Shared pieces of the live-experiment e2e files: the two bundled Cranfield BM25 engines as
 * stdio children of a real gateway process, and JSON-RPC batches (§11) to keep thousands of
 * requests cheap on a small machine.
 */
import path from 'node:path';
import { REPO_ROOT } from '../support/processes.js';
import { rpcRaw } from '../support/http-client.js';
import { catalog, waitUntil } from '../resilience/helpers.js';

export const SECRET = 'live-experiments-test-secret';

/**
 * The demo engines of config/default.json (titles, abstracts), with absolute commands. Building
 * their indexes can take a while on a busy machine: start the gateway, then `everyEngineReady`.
 */
export function demoEngines(): unknown[] {
  const main = path.join(REPO_ROOT, 'dist/demo/bm25/main.js');
  return [
    { id: 'titles', transport: 'stdio', command: ['node', main, '--view', 'title', '--name', 'cranfield-titles'], required: false },
    { id: 'abstracts', transport: 'stdio', command: ['node', main, '--view', 'body', '--name', 'cranfield-abstracts'], required: false },
  ];
}

export async function everyEngineReady(url: string): Promise<void> {
  await waitUntil(
    'every engine ready',
    async () => [...(await catalog(url)).values()].every((engine) => engine._meta.status === 'ready'),
    300_000,
  );
}

export interface Call {
  method: string;
  params: Record<string, unknown>;
}

export interface Reply {
  result?: Record<string, unknown>;
  error?: { code: number; message: string };
}

/** One batch POSTed to the base URL; replies in the order of `calls`. */
export async function batch(url: string, calls: readonly Call[], headers: Record<string, string> = {}): Promise<Reply[]> {
  const body = JSON.stringify(calls.map((call, id) => ({ jsonrpc: '2.0', id, method: call.method, params: call.params })));
  const raw = await rpcRaw(url, body, headers);
  const replies = JSON.parse(raw.text) as Array<Reply & { id: number }>;
  if (!Array.isArray(replies)) throw new Error(`expected a batch reply, got HTTP ${raw.status}: ${raw.text.slice(0, 200)}`);
  const ordered: Reply[] = [];
  for (const reply of replies) ordered[reply.id] = reply;
  return ordered;
}

/** `calls` in batches of `size`, `parallel` batches in flight. */
export async function batches(url: string, calls: readonly Call[], size = 50, parallel = 2): Promise<Reply[]> {
  const chunks: Call[][] = [];
  for (let i = 0; i < calls.length; i += size) chunks.push(calls.slice(i, i + size));
  const out: Reply[][] = new Array<Reply[]>(chunks.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: parallel }, async () => {
      while (next < chunks.length) {
        const index = next++;
        out[index] = await batch(url, chunks[index]!);
      }
    }),
  );
  return out.flat();
}

export function xrcpgw(reply: Reply): Record<string, unknown> {
  const meta = (reply.result?._meta ?? {}) as Record<string, unknown>;
  return (meta['x-rcpgw'] ?? {}) as Record<string, unknown>;
}
