/**
 * Federated `retrieve` (§7.7, §16.2, §16.3): validate once, fan out to every capable engine,
 * fuse by rank, report what degraded. Succeeds when at least one engine answered.
 */
import { ErrorCode, RcpError } from '../protocol/errors.js';
import { isJsonObject, type JsonObject } from '../protocol/jsonrpc.js';
import { RetrieveParamsSchema, parseParams, type RetrieveParams } from '../protocol/params.js';
import { finiteNumber, positiveInt, stringArray } from '../protocol/capabilities.js';
import type { CallContext } from '../service/contract.js';
import { UpstreamError } from '../upstream/errors.js';
import type { Engine } from '../upstream/engine.js';
import type { FederationContext } from './context.js';
import { accountFailures, fanout, failureOf, nothingAnswered, onPath, type LegFailure } from './fanout.js';
import { fuse } from './fusion/fuse.js';
import type { FusionMethod, RankedList } from './fusion/types.js';
import { ProgressRelay } from './progress.js';
import { sanitizeHits, requireHitsArray } from './sanitize.js';
import { pagedLeg, resumeFrom, servePage, type PagedLeg } from './pages.js';
import { allowedEngines, gatewayOptions } from './vendor.js';

const DEFAULT_K = 10;

/** §7.7 / §3.3: structural checks before any engine is asked. Clamps k to maxK (not an error, §12). */
export function validateRetrieve(params: JsonObject, maxK: number): RetrieveParams & { k: number } {
  const parsed = parseParams(RetrieveParamsSchema, params);
  const k = Math.min(parsed.k ?? DEFAULT_K, maxK);
  const topN = parsed.rerank ? parsed.rerank.topN : undefined;
  const candidateK = parsed.candidateK;
  // §3.3 funnel: candidateK ≥ rerank.topN ≥ k (checked on the client's values).
  const requestedK = parsed.k ?? DEFAULT_K;
  if (topN !== undefined && topN < requestedK) throw RcpError.invalidParams('rerank.topN', `must be ≥ k (${requestedK}) (§3.3 funnel)`);
  if (candidateK !== undefined && candidateK < (topN ?? requestedK)) {
    throw RcpError.invalidParams('candidateK', `must be ≥ ${topN !== undefined ? 'rerank.topN' : 'k'} (§3.3 funnel)`);
  }
  return { ...parsed, k };
}

interface Leg extends PagedLeg {
  /** What the first call asks this engine for. */
  k: number;
  dropMode: boolean;
}

export async function federatedRetrieve(rawParams: JsonObject, ctx: CallContext, fed: FederationContext): Promise<JsonObject> {
  const started = performance.now();
  const params = validateRetrieve(rawParams, fed.settings.maxK);
  const options = gatewayOptions(rawParams, fed.settings, { method: 'retrieve', headers: ctx.headers });
  // §10: a gateway cursor pins the engine set and window of the first page (pages.ts).
  const resume = resumeFrom('retrieve', rawParams, fed);
  const allowed = allowedEngines(options, fed.settings, 'retrieve', fed.engines);
  const notes: string[] = [];
  const strict = params.strict ?? true;

  // §16.2 hop budget: never forward at depth 0.
  const depth = ctx.meta.federation?.depth ?? fed.settings.federationDepth;
  if (depth <= 0) {
    throw new RcpError(ErrorCode.BackendUnavailable, 'federation depth exhausted: the gateway has no index of its own', {
      detail: '_meta.federation.depth is 0', retryable: false,
    });
  }
  const path = ctx.meta.federation?.path ?? [];

  const candidates = fed.engines.filter((engine) => (allowed === undefined || allowed.has(engine.id))
    && (resume === undefined || resume.engines.includes(engine.id)));
  const legs: Leg[] = [];
  const skippedFailures: LegFailure[] = [];
  let modeSkips = 0;
  for (const engine of candidates) {
    if (engine.capabilities === undefined) {
      // Never initialized: it may well serve retrieve, so it counts as a failed leg.
      const failure = failureOf(engine, new UpstreamError('not-ready', `engine is ${engine.status}${engine.lastError ? `: ${engine.lastError}` : ''}`), ctx);
      skippedFailures.push(failure);
      continue;
    }
    const cap = engine.capabilities.retrieve;
    if (!cap) continue; // §16.2: engines lacking the capability are skipped, not an error
    if (onPath(engine, path)) {
      notes.push(`engine ${engine.id} skipped: already on the federation path (cycle, §16.2)`);
      continue;
    }
    let dropMode = false;
    if (params.mode !== undefined) {
      const modes = stringArray(cap.modes);
      if (!modes.includes(params.mode)) {
        if (strict) {
          modeSkips++;
          notes.push(`engine ${engine.id} skipped: mode "${params.mode}" not supported (strict)`);
          continue;
        }
        dropMode = true;
        notes.push(`engine ${engine.id} asked without mode "${params.mode}" (unsupported; strict:false)`);
      }
    }
    // Ask for fusion headroom, never beyond the engine's maxK, never beyond rerank.topN (§3.3).
    let legK = Math.ceil(params.k * fed.settings.fusionHeadroom);
    const topN = params.rerank ? params.rerank.topN : undefined;
    if (topN !== undefined) legK = Math.min(legK, topN);
    const engineMax = positiveInt(cap.maxK);
    if (engineMax !== undefined) legK = Math.min(legK, engineMax);
    const callCap = Math.min(topN ?? Infinity, engineMax ?? Infinity, fed.settings.pageMaxDepth);
    legs.push({ engine, ...pagedLeg(resume, engine.id, Math.max(1, legK), callCap, fed.settings.pageMaxDepth), dropMode });
  }

  if (legs.length === 0 && skippedFailures.length === 0) {
    if (modeSkips > 0) throw RcpError.optionUnsupported('mode', `no engine supports mode "${params.mode}"`);
    throw new RcpError(ErrorCode.BackendUnavailable, 'no engine can serve retrieve', { engines: [] });
  }

  const legByEngine = new Map(legs.map((leg) => [leg.engine, leg]));
  const lists: RankedList[] = [];
  // Each answer is sanitized once, as its leg finishes, so progress frames can carry the running
  // fusion of the engines that have answered so far (§9 `partial.hits`; the final answer rules).
  const cleaned = new Map<Engine, ReturnType<typeof sanitizeHits>>();
  const cleanOf = (engine: Engine, result: JsonObject): ReturnType<typeof sanitizeHits> => {
    let clean = cleaned.get(engine);
    if (!clean) {
      clean = sanitizeHits(result, legByEngine.get(engine)!.k);
      cleaned.set(engine, clean);
    }
    return clean;
  };
  const listOf = (engine: Engine, hits: RankedList['hits']): RankedList => {
    const floor = finiteNumber(engine.capabilities?.retrieve?.scoreFloor);
    return { engine: engine.id, weight: options.weights[engine.id] ?? engine.weight, hits, ...(floor !== undefined ? { scoreFloor: floor } : {}) };
  };
  const answeredSoFar: RankedList[] = [];
  const relay = ctx.progress
    ? new ProgressRelay(
        (update) => {
          fed.hooks.onProgressFrame?.();
          ctx.progress?.(update);
        },
        legs.map((leg) => ({ engine: leg.engine.id, weight: leg.engine.weight })),
        fed.settings.progressFramesPerSecond,
        // A later page (§10) is not the running fusion's top k: it gets no partial hits.
        () => (resume ? [] : fuse(answeredSoFar, options.fusion, { k: params.k, rrfK: options.rrfK, dedup: options.dedup }).hits),
      )
    : undefined;

  const forwardParams = stripGatewayMeta(rawParams);
  let totalCandidates = 0;
  const paramsFor = (engine: Engine, legK: number, cursor: string | undefined): JsonObject => {
    const out: JsonObject = { ...forwardParams, k: legK };
    if (legByEngine.get(engine)?.dropMode) delete out.mode;
    if (cursor !== undefined) out.cursor = cursor;
    else delete out.cursor; // engine cursors live inside the gateway's own cursor
    return out;
  };
  const outcome = await fanout({
    method: 'retrieve',
    engines: legs.map((leg) => leg.engine),
    paramsFor: (engine) => paramsFor(engine, legByEngine.get(engine)!.k, undefined),
    onLegProgress: relay ? (engine, frame) => relay.legProgress(engine.id, frame) : undefined,
    onLegDone: (engine, ok, reason, result) => {
      if (!relay) return;
      if (ok && result) {
        const clean = cleanOf(engine, result);
        if ('error' in clean) return relay.legDone(engine.id, false, 'malformed');
        answeredSoFar.push(listOf(engine, clean.hits));
      }
      relay.legDone(engine.id, ok, reason);
    },
    onLegLog: ctx.log ? (engine, frame) => relayLog(ctx, engine.id, frame) : undefined,
    validate: requireHitsArray,
  }, ctx, fed);
  relay?.finish();
  notes.push(...outcome.notes);

  const failures = [...skippedFailures, ...outcome.failures];
  for (const success of outcome.successes) {
    const clean = cleanOf(success.engine, success.result);
    if ('error' in clean) {
      failures.push(failureOf(success.engine, new UpstreamError('malformed', clean.error), ctx));
      continue;
    }
    for (const problem of clean.problems) notes.push(`engine ${success.engine.id}: ${problem}`);
    totalCandidates += clean.hits.length;
    lists.push(listOf(success.engine, clean.hits));
  }

  const degraded = accountFailures(failures, fed, notes);
  if (lists.length === 0) throw nothingAnswered(failures, degraded, ctx);

  // Stable list order (by engine id) so fusion never depends on arrival order (§16.3).
  lists.sort(byEngineIdOrder);
  // The page of the fused result (the first page is the plain fusion's top k) and its cursor.
  const firstAnswers = new Map(outcome.successes.map((s) => [s.engine.id, { result: s.result, asked: legByEngine.get(s.engine)!.k }]));
  const fused = await servePage({ method: 'retrieve', params: rawParams, k: params.k, options, lists, firstAnswers, legs, resume, paramsFor }, ctx, fed);
  notes.push(...fused.notes);

  const usage: JsonObject = { candidates: totalCandidates, latencyMs: Math.round(performance.now() - started) };
  if (notes.length > 0) usage.notes = notes;
  return {
    hits: fused.hits,
    ...(fused.nextCursor !== undefined ? { nextCursor: fused.nextCursor } : {}),
    usage,
    _meta: {
      engines: lists.map((list) => list.engine),
      ...(degraded.length > 0 ? { degraded } : {}),
      fusion: fused.method,
      traceId: outcome.traceId,
      deadlineMs: ctx.deadlineMs,
    },
  };
}

/** Lists in engine-id order, so fusion never depends on the order engines answered in (§16.3). */
function byEngineIdOrder(a: RankedList, b: RankedList): number {
  return a.engine < b.engine ? -1 : a.engine > b.engine ? 1 : 0;
}

/**
 * What goes upstream: `null` fields dropped (§4.6: null = absent, so a stricter engine never
 * sees them), and neither the gateway's vendor `_meta` key nor the client's progress token,
 * deadline, federation path or trace id (the fan-out sets its own).
 */
export function stripGatewayMeta(params: JsonObject): JsonObject {
  const out: JsonObject = {};
  for (const key in params) {
    const value = params[key];
    if (value !== null && value !== undefined) out[key] = value;
  }
  if (isJsonObject(params._meta)) {
    const { progressToken: _token, 'x-rcpgw': _vendor, deadlineMs: _deadline, federation: _federation, traceId: _trace, ...rest } = params._meta;
    out._meta = rest;
  }
  return out;
}

export function relayLog(ctx: CallContext, engineId: string, frame: JsonObject): void {
  const level = frame.level;
  if (level !== 'debug' && level !== 'info' && level !== 'notice' && level !== 'warning' && level !== 'error') return;
  const message = typeof frame.message === 'string' ? frame.message.slice(0, 2_000) : '';
  const data = isJsonObject(frame.data) ? frame.data : undefined;
  ctx.log?.({ level, message, logger: `engine:${engineId}`, ...(data ? { data } : {}) });
}

export type { FusionMethod };
