/**
 * The search explorer's endpoint: one `retrieve` through the gateway's own service with fusion
 * lineage asked for, streamed as Server-Sent Events: `start`, `progress` frames while engines
 * answer (§9, with the running fusion's top ids), then `result` (fused hits, each engine's own
 * list, the contributions behind every fused score) or `failure` (not `error`, which EventSource keeps for
 * its own connection errors).
 */
import { MAX_FUSION_WEIGHT } from '../../core/config/primitives.js';
import type { GatewaySettings } from '../../core/config/schema.js';
import { RcpError } from '../../core/protocol/errors.js';
import type { JsonObject } from '../../core/protocol/jsonrpc.js';
import type { ProgressUpdate, RcpService } from '../../core/service/contract.js';
import { VENDOR_KEY } from '../../core/federation/vendor.js';
import { consoleCall } from './call-context.js';
import { sseResponse, type SseChannel } from './sse.js';

const EXCERPT_CHARS = 200;
const FUSIONS = new Set(['rrf', 'weighted', 'convex']);

export interface SearchRequest {
  query: string;
  k: number;
  fusion?: string;
  engines?: string[];
  weights?: Record<string, number>;
  rrfK?: number;
}

/** Read the explorer's query string; throws RcpError (shown to the user) on nonsense. */
export function parseSearch(url: URL, settings: GatewaySettings): SearchRequest {
  const q = url.searchParams;
  const query = (q.get('q') ?? '').trim();
  if (!query) throw RcpError.invalidParams('q', 'type a query');
  const k = Number(q.get('k') ?? 10);
  if (!Number.isSafeInteger(k) || k < 1) throw RcpError.invalidParams('k', 'must be a positive integer');
  const out: SearchRequest = { query, k: Math.min(k, settings.maxK) };
  const fusion = q.get('fusion');
  if (fusion) {
    if (!FUSIONS.has(fusion)) throw RcpError.invalidParams('fusion', 'rrf, weighted or convex');
    out.fusion = fusion;
  }
  const engines = (q.get('engines') ?? '').split(',').filter(Boolean);
  if (engines.length > 0) out.engines = engines;
  const weights: Record<string, number> = {};
  for (const pair of (q.get('weights') ?? '').split(',').filter(Boolean)) {
    const at = pair.lastIndexOf(':');
    const weight = Number(pair.slice(at + 1));
    if (at <= 0 || !Number.isFinite(weight) || weight < 0 || weight > MAX_FUSION_WEIGHT)
      throw RcpError.invalidParams('weights', `"${pair}" is not engine:weight (a weight from 0 to ${MAX_FUSION_WEIGHT})`);
    weights[pair.slice(0, at)] = weight;
  }
  if (Object.keys(weights).length > 0) out.weights = weights;
  const rrfK = q.get('rrfK');
  if (rrfK) {
    const n = Number(rrfK);
    if (!Number.isFinite(n) || n < 0) throw RcpError.invalidParams('rrfK', 'must be a number ≥ 0');
    out.rrfK = n;
  }
  return out;
}

export function retrieveParams(search: SearchRequest): JsonObject {
  const vendor: JsonObject = { lineage: true };
  if (search.fusion) vendor.fusion = search.fusion;
  if (search.engines) vendor.engines = search.engines;
  if (search.weights) vendor.weights = search.weights;
  if (search.rrfK !== undefined) vendor.rrfK = search.rrfK;
  return { query: search.query, k: search.k, _meta: { [VENDOR_KEY]: vendor } };
}

function idsOf(partial: JsonObject | undefined): Array<string | number> {
  const hits = partial?.hits;
  return Array.isArray(hits) ? hits.map((hit) => (hit as JsonObject).id as string | number) : [];
}

/** The answer as the explorer shows it: hits trimmed to an excerpt, lineage and notes as they are. */
function resultFrame(answer: JsonObject): JsonObject {
  const hits = Array.isArray(answer.hits) ? (answer.hits as JsonObject[]) : [];
  const meta = (answer._meta ?? {}) as JsonObject;
  return {
    hits: hits.map((hit) => {
      const text = typeof hit.text === 'string' ? hit.text : '';
      return { id: hit.id!, score: hit.score!, text: text.length > EXCERPT_CHARS ? `${text.slice(0, EXCERPT_CHARS)}…` : text };
    }),
    engines: meta.engines ?? [],
    degraded: meta.degraded ?? [],
    fusion: meta.fusion ?? null,
    lineage: ((meta[VENDOR_KEY] ?? {}) as JsonObject).lineage ?? null,
    usage: answer.usage ?? {},
  };
}

function errorFrame(err: unknown): JsonObject {
  if (err instanceof RcpError) return { code: err.code, message: err.message };
  return { code: -32603, message: err instanceof Error ? err.message : String(err) };
}

/** An explorer request that could not be read, answered as a `failure` event on the stream the page is listening to. */
export function searchRefused(err: unknown): Response {
  return sseResponse((channel) => {
    channel.send('failure', errorFrame(err));
    channel.end();
    return () => undefined;
  });
}

export function searchStream(search: SearchRequest, service: RcpService, onClose?: () => void): Response {
  return sseResponse((channel: SseChannel) => {
    const started = performance.now();
    const progress = (update: ProgressUpdate): void =>
      channel.send('progress', {
        progress: update.progress ?? null,
        stage: update.stage ?? null,
        message: update.message ?? null,
        top: idsOf(update.partial).slice(0, 5),
        elapsedMs: Math.round(performance.now() - started),
      });
    const call = consoleCall('retrieve', service.defaultDeadlineMs, {}, progress);
    let settled = false;
    channel.send('start', { query: search.query, k: search.k });
    service.call('retrieve', retrieveParams(search), call.ctx).then(
      (answer) => {
        settled = true;
        channel.send('result', { ...resultFrame(answer), elapsedMs: Math.round(performance.now() - started) });
        channel.end();
      },
      (err: unknown) => {
        settled = true;
        channel.send('failure', errorFrame(err));
        channel.end();
      },
    );
    return () => {
      // The watcher left before the answer: the engines' work is abandoned, as for a client disconnect.
      if (!settled) call.abort('disconnect');
      call.done();
    };
  }, onClose);
}
