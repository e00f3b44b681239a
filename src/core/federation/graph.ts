/**
 * Federated `graph` (§7.9, §16.4): ops that return hits (`local`, `drift`) fan out to the engines
 * advertising that op and are fused like `retrieve` (same strategies, dedup and pagination;
 * drift `followups` merged and deduplicated); the other ops (`global`, `communities`,
 * `neighbors`) return one engine's view of its own graph and route to one engine (routing.ts),
 * as does any op sent to an engine the client names.
 */
import { ErrorCode, RcpError } from '../protocol/errors.js';
import type { JsonObject } from '../protocol/jsonrpc.js';
import { GraphParamsSchema, parseParams } from '../protocol/params.js';
import { stringArray } from '../protocol/capabilities.js';
import type { CallContext } from '../service/contract.js';
import { UpstreamError } from '../upstream/errors.js';
import type { Engine } from '../upstream/engine.js';
import type { FederationContext } from './context.js';
import { fusionLegDepth } from './depth.js';
import { accountFailures, fanout, nothingAnswered } from './fanout.js';
import type { RankedList } from './fusion/types.js';
import { failureOf, onPath, requireHopBudget, stripGatewayMeta } from './leg.js';
import { legParams, pagedLeg, requireReachableEngines, resumeFrom, type PagedLeg } from './paged-legs.js';
import { servePage } from './pages.js';
import { routeToOne } from './routing.js';
import { sanitizeHits, requireHitsArray } from './sanitize.js';
import { allowedEngines, gatewayOptions } from './vendor.js';

const HIT_OPS = new Set(['local', 'drift']);

export async function federatedGraph(rawParams: JsonObject, ctx: CallContext, fed: FederationContext): Promise<JsonObject> {
  const params = parseParams(GraphParamsSchema, rawParams);
  requireHopBudget(ctx, fed); // §16.2: graph is forwarded like retrieve
  const options = gatewayOptions(rawParams, fed.settings, { method: 'graph', headers: ctx.headers });
  if (!HIT_OPS.has(params.op) || options.engine !== undefined) return routeToOne('graph', rawParams, ctx, fed);
  const resume = resumeFrom('graph', rawParams, fed);
  const k = Math.min(params.k ?? 10, fed.settings.maxK);
  const path = ctx.meta.federation?.path ?? [];
  const allowed = allowedEngines(options, fed.settings, 'graph', fed.engines);
  requireReachableEngines(resume, fed.engines, allowed);
  const capable = fed.engines.filter(
    (engine) =>
      engine.capabilities !== undefined &&
      stringArray(engine.capabilities.graph?.ops).includes(params.op) &&
      (allowed === undefined || allowed.has(engine.id)) &&
      (resume === undefined || resume.engines.includes(engine.id)),
  );
  if (capable.length === 0) throw RcpError.optionUnsupported('op', `no engine advertises graph op "${params.op}"`);
  // §16.2: an engine already on the path is skipped and the cycle noted.
  const engines = capable.filter((engine) => !onPath(engine, path));
  const cycleNotes = capable
    .filter((engine) => onPath(engine, path))
    .map((engine) => `engine ${engine.id} skipped: already on the federation path (cycle, §16.2)`);
  if (engines.length === 0) {
    throw new RcpError(ErrorCode.BackendUnavailable, `every engine advertising graph op "${params.op}" is on the federation path (cycle)`, {
      retryable: false,
    });
  }

  const firstK = fusionLegDepth(k, fed.settings);
  const legs = new Map<Engine, PagedLeg>();
  for (const engine of engines) {
    // `graph` has no advertised k limit: an engine that clamps answers short, which ends its list.
    const cap = fed.settings.pageMaxDepth;
    legs.set(engine, { engine, ...pagedLeg(resume, engine.id, firstK, cap, cap) });
  }
  const outbound = stripGatewayMeta(rawParams);
  const outcome = await fanout(
    {
      method: 'graph',
      engines,
      paramsFor: (engine) => legParams(outbound, legs.get(engine)!, legs.get(engine)!.k),
      validate: requireHitsArray,
    },
    ctx,
    fed,
  );

  const lists: RankedList[] = [];
  const firstAnswers = new Map<string, { result: JsonObject; asked: number }>();
  const failures = [...outcome.failures];
  const notes: string[] = [...cycleNotes, ...outcome.notes];
  const followups = new Followups();
  for (const success of [...outcome.successes].sort((a, b) => (a.engine.id < b.engine.id ? -1 : 1))) {
    const asked = legs.get(success.engine)!.k;
    const clean = sanitizeHits(success.result, asked);
    if ('error' in clean) {
      failures.push(failureOf(success.engine, new UpstreamError('malformed', clean.error), ctx));
      continue;
    }
    for (const problem of clean.problems) notes.push(`engine ${success.engine.id}: ${problem}`);
    const { idSpace } = success.engine.config;
    lists.push({
      engine: success.engine.id,
      weight: options.weights[success.engine.id] ?? success.engine.weight,
      hits: clean.hits,
      ...(idSpace !== undefined ? { idSpace } : {}),
    });
    firstAnswers.set(success.engine.id, { result: success.result, asked });
    if (params.op === 'drift') followups.add(success.result.followups);
  }
  const degraded = accountFailures(failures, fed, notes);
  if (lists.length === 0) throw nothingAnswered(failures, degraded, ctx);
  const page = await servePage(
    {
      method: 'graph',
      params: rawParams,
      k,
      options,
      lists,
      firstAnswers,
      legs: [...legs.values()],
      resume,
      outbound,
    },
    ctx,
    fed,
  );
  notes.push(...page.notes);
  const result: JsonObject = {
    hits: page.hits,
    _meta: {
      engines: lists.map((l) => l.engine),
      ...(degraded.length > 0 ? { degraded } : {}),
      fusion: page.method,
      traceId: outcome.traceId,
    },
  };
  if (params.op === 'drift') result.followups = followups.list;
  if (page.nextCursor !== undefined) result.nextCursor = page.nextCursor;
  if (notes.length > 0) result.usage = { notes };
  return result;
}

/** Drift `followups` of every engine, merged in engine order, deduplicated by normalized text. */
class Followups {
  readonly list: string[] = [];
  private readonly seen = new Set<string>();

  add(followups: unknown): void {
    if (!Array.isArray(followups)) return;
    for (const followup of followups) {
      if (typeof followup !== 'string') continue;
      const key = followup.trim().toLowerCase().replace(/\s+/g, ' ');
      if (key.length === 0 || this.seen.has(key)) continue;
      this.seen.add(key);
      this.list.push(followup);
    }
  }
}
