/**
 * Small helpers shared by the fault-injection suite: typed retrieve/catalog calls, waiting on a
 * condition (never a fixed sleep), and process liveness for the "nothing left behind" checks.
 */
import { expect } from 'vitest';
import { rpc, type RpcReply } from '../support/http-client.js';
import { readEvents } from '../support/processes.js';

export interface Hit {
  id: string | number;
  score: number;
  meta: { engine: string };
}
export interface Degraded {
  engine: string;
  code: number;
  reason: string;
  detail?: string;
}
export interface RetrieveResult {
  hits: Hit[];
  usage: { notes?: string[]; latencyMs: number; candidates: number };
  _meta: { engines: string[]; degraded?: Degraded[]; deadlineMs: number };
}
export interface CatalogEngine {
  id: string;
  _meta: { status: string; breaker: string; breakerOpenings: number; breakerRetryInMs?: number };
}

/** The healthy engines' vocabulary (test-engine built-in corpus). */
export const QUERY = 'retrieval ranking fusion vector sparse graph';

let nextId = 1_000;

/** A federated retrieve; `engines` restricts the fan-out via the gateway's vendor `_meta`. */
export function retrieve(
  url: string,
  opts: { deadlineMs?: number; engines?: string[]; k?: number } = {},
): Promise<RpcReply<RetrieveResult>> {
  const meta: Record<string, unknown> = {};
  if (opts.deadlineMs !== undefined) meta.deadlineMs = opts.deadlineMs;
  if (opts.engines) meta['x-rcpgw'] = { engines: opts.engines };
  const id = nextId++;
  return rpc<RetrieveResult>(url, 'retrieve', { query: QUERY, k: opts.k ?? 4, _meta: meta }, { id }).then((res) => {
    // Exactly one answer, to this request: one JSON-RPC object echoing our id.
    expect(Array.isArray(res.body)).toBe(false);
    if (res.status === 200) expect(res.id).toBe(id);
    return res;
  });
}

export async function catalog(url: string): Promise<Map<string, CatalogEngine>> {
  const res = await rpc<{ engines: CatalogEngine[] }>(url, 'catalog/list', {});
  return new Map(res.result!.engines.map((e) => [e.id, e]));
}

/** Poll `check` until it returns a value other than undefined/false, or fail after `timeoutMs`. */
export async function waitUntil<T>(
  what: string,
  check: () => Promise<T | undefined | false> | T | undefined | false,
  timeoutMs = 10_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

export async function breakerState(url: string, engine: string): Promise<string | undefined> {
  return (await catalog(url)).get(engine)?._meta.breaker;
}

/** Engine process ids from a test engine's `start` events (one per (re)start). */
export function enginePids(eventsFile: string): number[] {
  return readEvents(eventsFile)
    .filter((e) => e.ev === 'start' && typeof e.pid === 'number')
    .map((e) => e.pid!);
}

/** Requests an engine received for `method` (its own view, from the events file). */
export function requestsSeen(eventsFile: string, method = 'retrieve'): number {
  return readEvents(eventsFile).filter((e) => e.ev === 'request' && e.method === method).length;
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Every process in `pids` has exited (waits a little: the exit may still be in progress). */
export async function expectAllGone(pids: number[]): Promise<void> {
  expect(pids.length).toBeGreaterThan(0);
  await waitUntil(`engine processes ${pids.join(', ')} to exit`, () => pids.every((pid) => !isAlive(pid)), 10_000);
}

/** A successful retrieve answered within the deadline the gateway reports, with the healthy engine's hits. */
export function expectHealthyAnswer(res: RpcReply<RetrieveResult>, deadlineMs: number, healthy: string): RetrieveResult {
  expect(res.status).toBe(200);
  expect(res.error).toBeUndefined();
  const result = res.result!;
  expect(result._meta.deadlineMs).toBe(deadlineMs);
  expect(result.usage.latencyMs).toBeLessThanOrEqual(result._meta.deadlineMs);
  expect(result.hits.length).toBeGreaterThan(0);
  expect(result.hits.some((h) => h.meta.engine === healthy)).toBe(true);
  return result;
}

export function notesOf(result: RetrieveResult): string {
  return (result.usage.notes ?? []).join('\n');
}
