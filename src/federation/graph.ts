/**
 * Federated `graph` (§7.9, §16.4): ops that return hits (`local`, `drift`) fan out to engines
 * advertising that op and are fused like `retrieve` (drift `followups` merged, deduplicated);
 * other ops (`global`, `communities`, `neighbors`) route to one engine.
 */
import { ErrorCode, RcpError } from '../protocol/errors.js';
import type { JsonObject } from '../protocol/jsonrpc.js';
import { GraphParamsSchema, parseParams } from '../protocol/params.js';
import { stringArray } from '../protocol/capabilities.js';
import type { CallContext } from '../server/service.js';
import { toClientError, UpstreamError } from '../upstream/errors.js';
import type { FederationContext } from './context.js';
import { fanout, failureOf, onPath } from './fanout.js';
import { fuse } from './fusion/fuse.js';
import type { RankedList } from './fusion/types.js';
import { stripGatewayMeta } from './retrieve.js';
import { routeToOne } from './routing.js';
import { sanitizeHits } from './sanitize.js';
import { gatewayOptions } from './vendor.js';

const HIT_OPS = new Set(['local', 'drift']);

export async function federatedGraph(rawParams: JsonObject, ctx: CallContext, fed: FederationContext): Promise<JsonObject> {
  const params = parseParams(GraphParamsSchema, rawParams);
  if (!HIT_OPS.has(params.op)) return routeToOne('graph', rawParams, ctx, fed);
  const options = gatewayOptions(rawParams, fed.settings);
  if (options.engine !== undefined) return routeToOne('graph', rawParams, ctx, fed);
  const k = Math.min(params.k ?? 10, fed.settings.maxK);
  const path = ctx.meta.federation?.path ?? [];
  const engines = fed.engines.filter((engine) =>
    engine.capabilities !== undefined && stringArray(engine.capabilities.graph?.ops).includes(params.op) && !onPath(engine, path)
    && (options.engines === undefined || options.engines.includes(engine.id)));
  if (engines.length === 0) throw RcpError.optionUnsupported('op', `no engine advertises graph op "${params.op}"`);
  const legK = Math.ceil(k * fed.settings.fusionHeadroom);
  const outbound = stripGatewayMeta(rawParams);
  const outcome = await fanout({ method: 'graph', engines, paramsFor: () => ({ ...outbound, k: legK }) }, ctx, fed);

  const lists: RankedList[] = [];
  const failures = [...outcome.failures];
  const notes: string[] = [];
  const followups: string[] = [];
  const seenFollowups = new Set<string>();
  for (const success of outcome.successes) {
    const clean = sanitizeHits(success.result, legK);
    if ('error' in clean) {
      failures.push(failureOf(success.engine, new UpstreamError('malformed', clean.error), ctx));
      continue;
    }
    for (const problem of clean.problems) notes.push(`engine ${success.engine.id}: ${problem}`);
    lists.push({ engine: success.engine.id, weight: success.engine.weight, hits: clean.hits });
    if (params.op === 'drift' && Array.isArray(success.result.followups)) {
      for (const followup of success.result.followups) {
        if (typeof followup !== 'string') continue;
        const key = followup.trim().toLowerCase();
        if (key.length === 0 || seenFollowups.has(key)) continue;
        seenFollowups.add(key);
        followups.push(followup);
      }
    }
  }
  const degraded = failures.map((f) => ({ engine: f.engine, code: f.code, reason: f.reason }));
  for (const failure of failures) {
    notes.push(`engine ${failure.engine} dropped: ${failure.reason} (${failure.code})`);
    const engine = fed.engines.find((e) => e.id === failure.engine);
    if (engine?.required) throw toClientError(failure.error, engine.id);
  }
  if (lists.length === 0) {
    throw new RcpError(ErrorCode.BackendUnavailable, 'every engine failed', { retryable: true, engines: degraded });
  }
  lists.sort((a, b) => (a.engine < b.engine ? -1 : 1));
  const fused = fuse(lists, 'rrf', { k, rrfK: options.rrfK, dedup: options.dedup });
  const result: JsonObject = {
    hits: fused.hits,
    _meta: { engines: lists.map((l) => l.engine), ...(degraded.length > 0 ? { degraded } : {}), fusion: 'rrf', traceId: outcome.traceId },
  };
  if (params.op === 'drift') result.followups = followups;
  if (notes.length > 0) result.usage = { notes };
  return result;
}
