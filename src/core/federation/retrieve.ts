/**
 * Federated `retrieve` (§7.7, §16.2, §16.3): validate once, plan one leg per capable engine, fan
 * out, fuse by rank, report what degraded. Succeeds when at least one engine answered.
 *
 * Who is asked what is decided first (retrieve-plan.ts); the option rules live in
 * retrieve-options.ts, the depth rule in depth.ts and paging in pages.ts.
 */
import type { JsonObject } from '../protocol/jsonrpc.js';
import { finiteNumber } from '../protocol/capabilities.js';
import type { CallContext } from '../service/contract.js';
import { UpstreamError } from '../upstream/errors.js';
import type { Engine } from '../upstream/engine.js';
import type { FederationContext } from './context.js';
import { accountFailures, fanout, nothingAnswered, type FanoutOutcome, type FanoutPlan } from './fanout.js';
import { fuse } from './fusion/fuse.js';
import { compareCodePoints } from './fusion/order.js';
import { fusionLineage } from './fusion/lineage.js';
import type { FusionMethod, RankedList } from './fusion/types.js';
import { failureOf, relayLog, stripGatewayMeta, type LegFailure } from './leg.js';
import { ProgressRelay } from './progress.js';
import { sanitizeHits, requireHitsArray } from './sanitize.js';
import { legParams } from './paged-legs.js';
import { servePage } from './pages.js';
import { planRetrieve, type RetrievePlan } from './retrieve-plan.js';
import { VENDOR_KEY } from './vendor.js';

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
  // (Checked first: the sort builtin allocates scratch even for lists already in order.)
  if (!inEngineIdOrder(lists)) lists.sort(byEngineIdOrder);
  // The page of the fused result (the first page is the plain fusion's top k) and its cursor.
  const firstAnswers = new Map(outcome.successes.map((s) => [s.engine.id, { result: s.result, asked: plan.legs.get(s.engine)!.k }]));
  const served = servePage(
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
  // A page that needed no deeper reads is ready now: no await, no extra turn of the microtask queue.
  const fused = served instanceof Promise ? await served : served;
  plan.notes.push(...fused.notes);

  const usage: JsonObject = { candidates, latencyMs: Math.round(performance.now() - started) };
  if (plan.notes.length > 0) usage.notes = plan.notes;
  // Built field by field in the answer's key order: the optional fields are set, not spread in.
  const meta: JsonObject = { engines: lists.map((list) => list.engine) };
  if (degraded.length > 0) meta.degraded = degraded;
  meta.fusion = fused.method;
  meta.traceId = outcome.traceId;
  meta.deadlineMs = ctx.deadlineMs;
  // Asked-for debugging aid (vendor.ts `lineage`); the first page only, where `lists` is what was fused.
  if (plan.options.lineage && !plan.resume) {
    meta[VENDOR_KEY] = { lineage: fusionLineage(lists, fused.hits, fused.method, plan.options.rrfK) };
  }
  const answer: JsonObject = { hits: fused.hits };
  if (fused.nextCursor !== undefined) answer.nextCursor = fused.nextCursor;
  answer.usage = usage;
  answer._meta = meta;
  return answer;
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
    // `hits` come from sanitizeHits: distinct ids.
    const list: RankedList = { engine: engine.id, weight: this.plan.options.weights[engine.id] ?? engine.weight, hits, distinctIds: true };
    if (floor !== undefined) list.scoreFloor = floor;
    if (engine.config.idSpace !== undefined) list.idSpace = engine.config.idSpace;
    return list;
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

function inEngineIdOrder(lists: readonly RankedList[]): boolean {
  for (let i = 1; i < lists.length; i++) if (byEngineIdOrder(lists[i - 1]!, lists[i]!) > 0) return false;
  return true;
}

/** Lists in engine-id order, so fusion never depends on the order engines answered in (§16.3). */
function byEngineIdOrder(a: RankedList, b: RankedList): number {
  return compareCodePoints(a.engine, b.engine);
}

export type { FusionMethod };
