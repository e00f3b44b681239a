/**
 * The plan of a federated `retrieve` (§7.7, §16.2, §3.3), decided before anything is sent: the
 * params validated once, then one leg per engine that can serve the request (its depth, its cap,
 * the options it is asked without), the engines skipped and why, and the option policy applied
 * across the legs. retrieve.ts carries the plan out.
 */
import { shallowCopy } from '../protocol/copy.js';
import { ErrorCode, RcpError } from '../protocol/errors.js';
import type { JsonObject } from '../protocol/jsonrpc.js';
import { RetrieveParamsSchema, parseParams, type RetrieveParams } from '../protocol/params.js';
import { positiveInt, stringArray } from '../protocol/capabilities.js';
import type { CallContext } from '../service/contract.js';
import { UpstreamError } from '../upstream/errors.js';
import type { Engine } from '../upstream/engine.js';
import type { FederationContext } from './context.js';
import { fusionLegDepth } from './depth.js';
import { acceptsModality, decideOptions, optionSupport, requestModality } from './retrieve-options.js';
import { failureOf, onPath, requireHopBudget, type LegFailure } from './leg.js';
import { pagedLeg, requireReachableEngines, resumeFrom, type PagedLeg, type Resume } from './paged-legs.js';
import { allowedEngines, gatewayOptions, type GatewayOptions } from './vendor.js';

const DEFAULT_K = 10;

/**
 * The most common request, `query` text and an optional positive integer `k` and nothing else:
 * what the schema would give back for it, without running the schema (the request pays only for
 * the checks its fields need).
 */
function plainRetrieve(params: JsonObject, maxK: number): (RetrieveParams & { k: number }) | undefined {
  for (const key in params) if (key !== 'query' && key !== 'k') return undefined;
  const { query, k } = params;
  if (typeof query !== 'string') return undefined;
  if (k === undefined) return { query, k: Math.min(DEFAULT_K, maxK) };
  // §4.6: 53-bit integers only; anything else goes to the schema for its -32602.
  if (typeof k !== 'number' || !Number.isSafeInteger(k) || k < 1) return undefined;
  return { query, k: Math.min(k, maxK) };
}

/** §7.7 / §3.3: structural checks before any engine is asked. Clamps k to maxK (not an error, §12). */
export function validateRetrieve(params: JsonObject, maxK: number): RetrieveParams & { k: number } {
  const plain = plainRetrieve(params, maxK);
  if (plain) return plain;
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
  const out = shallowCopy(parsed); // then extended: protocol/copy.ts
  out.k = k;
  return out as RetrieveParams & { k: number };
}

/** Who is asked what, decided before anything is sent. */
export interface RetrievePlan {
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

/** Validate, then one leg per engine that can serve this retrieve. Throws when no engine can. */
export function planRetrieve(rawParams: JsonObject, ctx: CallContext, fed: FederationContext): RetrievePlan {
  requireHopBudget(ctx, fed); // §16.2: never forward at depth 0
  const params = validateRetrieve(rawParams, fed.settings.maxK);
  const options = gatewayOptions(rawParams, fed.settings, { method: 'retrieve', headers: ctx.headers });
  const resume = resumeFrom('retrieve', rawParams, fed);
  const allowed = allowedEngines(options, fed.settings, 'retrieve', fed.engines);
  requireReachableEngines(resume, fed.engines, allowed);
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
  const decision = decideOptions(rawParams, () => optionSupport([...plan.legs.keys()].map((engine) => engine.capabilities!)));
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
  const leg: PagedLeg = { engine, base: paged.base, cap: paged.cap, k: paged.k };
  if (omit) leg.omit = omit;
  plan.legs.set(engine, leg);
}
