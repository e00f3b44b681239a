/**
 * Federated `retrieve` (§7.7, §16.2, §16.3): validate once, plan one leg per capable engine, fan
 * out, fuse by rank, report what degraded. Succeeds when at least one engine answered.
 *
 * Longer than 300 lines on purpose: plan, option policy, fan-out and answer assembly are the steps
 * of one request and share its plan; the option rules themselves live in retrieve-options.ts,
 * the depth rule in depth.ts and paging in pages.ts.
 */
import { ErrorCode, RcpError } from '../protocol/errors.js';
import type { JsonObject } from '../protocol/jsonrpc.js';
import { RetrieveParamsSchema, parseParams, type RetrieveParams } from '../protocol/params.js';
import { finiteNumber, positiveInt, stringArray } from '../protocol/capabilities.js';
import type { CallContext } from '../service/contract.js';
import { UpstreamError } from '../upstream/errors.js';
import type { Engine } from '../upstream/engine.js';
import type { FederationContext } from './context.js';
import { accountFailures, fanout, nothingAnswered, type FanoutOutcome, type FanoutPlan } from './fanout.js';
import { fusionLegDepth } from './depth.js';
import { acceptsModality, decideOptions, optionSupport, requestModality } from './retrieve-options.js';
import { fuse } from './fusion/fuse.js';
import { compareCodePoints } from './fusion/order.js';
import { fusionLineage } from './fusion/lineage.js';
import type { FusionMethod, RankedList } from './fusion/types.js';
import { failureOf, onPath, relayLog, requireHopBudget, stripGatewayMeta, type LegFailure } from './leg.js';
import { ProgressRelay } from './progress.js';
import { sanitizeHits, requireHitsArray } from './sanitize.js';
import { legParams, pagedLeg, resumeFrom, servePage, type PagedLeg, type Resume } from './pages.js';
import { allowedEngines, gatewayOptions, VENDOR_KEY, type GatewayOptions } from './vendor.js';

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

/** Who is asked what, decided before anything is sent. */
interface RetrievePlan {
  params: RetrieveParams & { k: number };
  /** The client's params as sent (the options the schema does not model). */
  raw: JsonObject;
  options: GatewayOptions;
  /** §10: a gateway cursor pins the engine set and window of the first page (pages.ts). */
  resume: Resume | undefined;
  legs: Map<Engine, PagedLeg>;
  /** Engines that never initialized: they may well serve retrieve, so each counts as a failed leg. */
  unready: LegFailure[];
  /** Engines skipped for lacking the requested mode (strict) or modality. */
  skipped: { mode: number; modality: number };
  notes: string[];
}

type Sanitized = ReturnType<typeof sanitizeHits>;

export async function federatedRetrieve(rawParams: JsonObject, ctx: CallContext, fed: FederationContext): Promise<JsonObject> {
  const started = performance.now();
  const plan = planRetrieve(rawParams, ctx, fed);
  const answers = new Answers(plan);
  const progress = progressFor(plan, answers, ctx, fed);
  const outbound = stripGatewayMeta(rawParams);
  const outcome = await fanout(
    {
      method: 'retrieve',
      engines: [...plan.legs.keys()],
      paramsFor: (engine) => legParams(outbound, plan.legs.get(engine)!, plan.legs.get(engine)!.k),
      onLegProgress: progress ? (engine, frame) => progress.relay.legProgress(engine.id, frame) : undefined,
      onLegDone: progress?.legDone,
      onLegLog: ctx.log ? (engine, frame) => relayLog(ctx, engine.id, frame) : undefined,
      validate: requireHitsArray,
    },
    ctx,
    fed,
  );
  progress?.relay.finish();
  plan.notes.push(...outcome.notes);

  const { lists, failures, candidates } = collectLists(plan, answers, outcome, ctx);
  const degraded = accountFailures(failures, fed, plan.notes);
  if (lists.length === 0) throw nothingAnswered(failures, degraded, ctx);
  // Stable list order (by engine id) so fusion never depends on arrival order (§16.3).
  lists.sort(byEngineIdOrder);
  // The page of the fused result (the first page is the plain fusion's top k) and its cursor.
  const firstAnswers = new Map(outcome.successes.map((s) => [s.engine.id, { result: s.result, asked: plan.legs.get(s.engine)!.k }]));
  const fused = await servePage(
    {
      method: 'retrieve',
      params: rawParams,
      k: plan.params.k,
      options: plan.options,
      lists,
      firstAnswers,
      legs: [...plan.legs.values()],
      resume: plan.resume,
      outbound,
    },
    ctx,
    fed,
  );
  plan.notes.push(...fused.notes);

  const usage: JsonObject = { candidates, latencyMs: Math.round(performance.now() - started) };
  if (plan.notes.length > 0) usage.notes = plan.notes;
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
      // Asked-for debugging aid (vendor.ts `lineage`); the first page only, where `lists` is what was fused.
      ...(plan.options.lineage && !plan.resume
        ? { [VENDOR_KEY]: { lineage: fusionLineage(lists, fused.hits, fused.method, plan.options.rrfK) } }
        : {}),
    },
  };
}

/** Validate, then one leg per engine that can serve this retrieve. Throws when no engine can. */
function planRetrieve(rawParams: JsonObject, ctx: CallContext, fed: FederationContext): RetrievePlan {
  requireHopBudget(ctx, fed); // §16.2: never forward at depth 0
  const params = validateRetrieve(rawParams, fed.settings.maxK);
  const options = gatewayOptions(rawParams, fed.settings, { method: 'retrieve', headers: ctx.headers });
  const resume = resumeFrom('retrieve', rawParams, fed);
  const allowed = allowedEngines(options, fed.settings, 'retrieve', fed.engines);
  const path = ctx.meta.federation?.path ?? [];
  const plan: RetrievePlan = {
    params,
    raw: rawParams,
    options,
    resume,
    legs: new Map(),
    unready: [],
    skipped: { mode: 0, modality: 0 },
    notes: [],
  };
  for (const engine of fed.engines) {
    if ((allowed === undefined || allowed.has(engine.id)) && (resume === undefined || resume.engines.includes(engine.id))) {
      addLeg(plan, engine, path, ctx, fed);
    }
  }
  if (plan.legs.size === 0 && plan.unready.length === 0) {
    if (plan.skipped.modality > 0) throw RcpError.optionUnsupported('modality', `no engine accepts ${requestModality(rawParams)} queries`);
    if (plan.skipped.mode > 0) throw RcpError.optionUnsupported('mode', `no engine supports mode "${params.mode}"`);
    throw new RcpError(ErrorCode.BackendUnavailable, 'no engine can serve retrieve', { engines: [] });
  }
  applyOptionPolicy(plan, rawParams);
  return plan;
}

/**
 * The pipeline options (retrieve-options.ts) against every engine this request fans out to,
 * before any is called: refused (-32005 / -32602), or dropped for all of them with a note.
 */
function applyOptionPolicy(plan: RetrievePlan, rawParams: JsonObject): void {
  if (plan.legs.size === 0) return; // only engines that never came up: the call fails as nothing answered
  const decision = decideOptions(rawParams, optionSupport([...plan.legs.keys()].map((engine) => engine.capabilities!)));
  plan.notes.push(...decision.notes);
  if (decision.omit.length === 0) return;
  for (const [engine, leg] of plan.legs) plan.legs.set(engine, { ...leg, omit: [...(leg.omit ?? []), ...decision.omit] });
}

/** `engine`'s place in the plan: a leg, a failure (never initialized), or skipped (and why, in the notes). */
function addLeg(plan: RetrievePlan, engine: Engine, path: readonly string[], ctx: CallContext, fed: FederationContext): void {
  if (engine.capabilities === undefined) {
    plan.unready.push(
      failureOf(
        engine,
        new UpstreamError('not-ready', `engine is ${engine.status}${engine.lastError ? `: ${engine.lastError}` : ''}`),
        ctx,
      ),
    );
    return;
  }
  const cap = engine.capabilities.retrieve;
  if (!cap) return; // §16.2: engines lacking the capability are skipped, not an error
  if (onPath(engine, path)) {
    plan.notes.push(`engine ${engine.id} skipped: already on the federation path (cycle, §16.2)`);
    return;
  }
  const { params } = plan;
  const modality = requestModality(plan.raw);
  if (!acceptsModality(cap, modality)) {
    plan.skipped.modality++;
    plan.notes.push(`engine ${engine.id} skipped: ${modality} queries not accepted (retrieve.modalities)`);
    return;
  }
  let omit: string[] | undefined;
  if (params.mode !== undefined && !stringArray(cap.modes).includes(params.mode)) {
    if (params.strict ?? true) {
      plan.skipped.mode++;
      plan.notes.push(`engine ${engine.id} skipped: mode "${params.mode}" not supported (strict)`);
      return;
    }
    omit = ['mode'];
    plan.notes.push(`engine ${engine.id} asked without mode "${params.mode}" (unsupported; strict:false)`);
  }
  // The fusion depth (depth.ts), never beyond the engine's maxK, nor the funnel the client set
  // (§3.3: candidateK ≥ rerank.topN ≥ k, so an engine is never asked for more than either).
  const topN = params.rerank ? params.rerank.topN : undefined;
  const funnel = Math.min(topN ?? Infinity, params.candidateK ?? Infinity);
  const engineMax = positiveInt(cap.maxK);
  const legK = Math.min(fusionLegDepth(params.k, fed.settings), funnel, engineMax ?? Infinity);
  const callCap = Math.min(funnel, engineMax ?? Infinity, fed.settings.pageMaxDepth);
  const paged = pagedLeg(plan.resume, engine.id, Math.max(1, legK), callCap, fed.settings.pageMaxDepth);
  plan.legs.set(engine, { engine, ...paged, ...(omit ? { omit } : {}) });
}

/**
 * Each answer sanitized once, as its leg finishes, so progress frames can carry the running
 * fusion of the engines that have answered so far (§9 `partial.hits`; the final answer rules).
 */
class Answers {
  private readonly cleaned = new Map<Engine, Sanitized>();

  constructor(private readonly plan: RetrievePlan) {}

  clean(engine: Engine, result: JsonObject): Sanitized {
    let clean = this.cleaned.get(engine);
    if (!clean) {
      clean = sanitizeHits(result, this.plan.legs.get(engine)!.k);
      this.cleaned.set(engine, clean);
    }
    return clean;
  }

  list(engine: Engine, hits: RankedList['hits']): RankedList {
    const floor = finiteNumber(engine.capabilities?.retrieve?.scoreFloor);
    return {
      engine: engine.id,
      weight: this.plan.options.weights[engine.id] ?? engine.weight,
      hits,
      ...(floor !== undefined ? { scoreFloor: floor } : {}),
      ...(engine.config.idSpace !== undefined ? { idSpace: engine.config.idSpace } : {}),
    };
  }
}

/** §9: aggregated progress for a client that asked for it, `partial.hits` from the answers so far. */
function progressFor(
  plan: RetrievePlan,
  answers: Answers,
  ctx: CallContext,
  fed: FederationContext,
): { relay: ProgressRelay; legDone: FanoutPlan['onLegDone'] } | undefined {
  if (!ctx.progress) return undefined;
  const { params, options, resume } = plan;
  const answeredSoFar: RankedList[] = [];
  const relay = new ProgressRelay(
    (update) => {
      fed.hooks.onProgressFrame?.();
      ctx.progress?.(update);
    },
    [...plan.legs.keys()].map((engine) => ({ engine: engine.id, weight: engine.weight })),
    fed.settings.progressFramesPerSecond,
    // A later page (§10) is not the running fusion's top k: it gets no partial hits.
    () => (resume ? [] : fuse(answeredSoFar, options.fusion, { k: params.k, rrfK: options.rrfK, dedup: options.dedup }).hits),
  );
  const legDone = (engine: Engine, ok: boolean, reason?: string, result?: JsonObject): void => {
    if (ok && result) {
      const clean = answers.clean(engine, result);
      if ('error' in clean) return relay.legDone(engine.id, false, 'malformed');
      answeredSoFar.push(answers.list(engine, clean.hits));
    }
    relay.legDone(engine.id, ok, reason);
  };
  return { relay, legDone };
}

/** The engines' ranked lists; an answer that fails sanitizing becomes a failed leg. */
function collectLists(
  plan: RetrievePlan,
  answers: Answers,
  outcome: FanoutOutcome,
  ctx: CallContext,
): { lists: RankedList[]; failures: LegFailure[]; candidates: number } {
  const failures = [...plan.unready, ...outcome.failures];
  const lists: RankedList[] = [];
  let candidates = 0;
  for (const success of outcome.successes) {
    const clean = answers.clean(success.engine, success.result);
    if ('error' in clean) {
      failures.push(failureOf(success.engine, new UpstreamError('malformed', clean.error), ctx));
      continue;
    }
    for (const problem of clean.problems) plan.notes.push(`engine ${success.engine.id}: ${problem}`);
    candidates += clean.hits.length;
    lists.push(answers.list(success.engine, clean.hits));
  }
  return { lists, failures, candidates };
}

/** Lists in engine-id order, so fusion never depends on the order engines answered in (§16.3). */
function byEngineIdOrder(a: RankedList, b: RankedList): number {
  return compareCodePoints(a.engine, b.engine);
}

export type { FusionMethod };
