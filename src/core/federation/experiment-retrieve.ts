/**
 * The retrieve path's experiment hook (core/experiments): decides whether a request is in a live
 * experiment and, if so, serves it by its arm (split), its primary with a shadow (shadow), or
 * both arms interleaved (interleave). A gateway without experiments pays one check
 * (`hasExperiments`) and goes straight to the ordinary federated retrieve.
 *
 * Who is in no experiment: a request without the assignment key, outside the experiment's traffic
 * share, or that names its own setup in `_meta["x-rcpgw"]` (engines, engine, fusion, weights,
 * rrfK, dedup) or in the `x-rcpgw-engine` header — it asked for something specific, and it gets
 * it. Such requests are served as if no experiment existed. A request is in at most one
 * experiment: the first of `gateway.experiments.list` that takes it.
 *
 * A request with a `cursor` (§10, a later page) keeps its arm in a split and gets the primary
 * alone in a shadow experiment; interleaved answers carry no cursor, so a cursor request is never
 * interleaved.
 */
import type { ExperimentsConfig } from '../experiments/arms.js';
import { assignmentKeyOf, assignmentMeta, type RequestView } from '../experiments/assignment.js';
import type { Chosen, ExperimentRuntime } from '../experiments/runtime.js';
import { isJsonObject, type JsonObject } from '../protocol/jsonrpc.js';
import type { CallContext } from '../service/contract.js';
import type { FederationContext } from './context.js';
import { reportArm, runArm, tagged } from './experiment-arm.js';
import { interleaveRetrieve } from './experiment-interleave.js';
import { shadowRetrieve } from './experiment-shadow.js';
import { federatedRetrieve } from './retrieve.js';
import { validateRetrieve } from './retrieve-plan.js';
import { TARGET_HEADER, VENDOR_KEY } from './vendor.js';

/** The vendor fields by which a request picks its own setup (vendor.ts). */
const SETUP_FIELDS = ['engines', 'engine', 'fusion', 'weights', 'rrfK', 'dedup'] as const;

/** The one check every retrieve pays. */
export function hasExperiments(fed: FederationContext): boolean {
  return fed.experiments !== undefined && fed.settings.experiments !== undefined && fed.settings.experiments.list.length > 0;
}

export function experimentRetrieve(params: JsonObject, ctx: CallContext, fed: FederationContext): Promise<JsonObject> {
  if (!hasExperiments(fed)) return federatedRetrieve(params, ctx, fed);
  const section = fed.settings.experiments!;
  const runtime = fed.experiments!;
  const view: RequestView = { params, headers: ctx.headers, principal: principalOf(ctx) };
  const chosen = namesOwnSetup(params, ctx) ? undefined : runtime.choose(section, view);
  if (chosen === undefined) return federatedRetrieve(params, ctx, fed);
  return serve(chosen, view, section, ctx, fed, runtime);
}

async function serve(
  { experiment, assignment }: Chosen,
  view: RequestView,
  section: ExperimentsConfig,
  ctx: CallContext,
  fed: FederationContext,
  runtime: ExperimentRuntime,
): Promise<JsonObject> {
  const { params } = view;
  const later = typeof params.cursor === 'string' && params.cursor.length > 0;
  if (experiment.kind === 'shadow' && !assignment.forced) {
    const { k } = validateRetrieve(params, fed.settings.maxK);
    const request = {
      experiment,
      primary: section.arms[experiment.primary]!,
      shadow: section.arms[experiment.shadow]!,
      sampled: assignment.shadowSampled === true && !later,
      k,
    };
    return shadowRetrieve(request, params, ctx, fed, runtime);
  }
  if (experiment.kind === 'interleave' && !assignment.forced) {
    const key = assignmentKeyOf(experiment.assignBy, view);
    if (later || key === undefined) return federatedRetrieve(params, ctx, fed);
    const { k } = validateRetrieve(params, fed.settings.maxK);
    const arms = [section.arms[experiment.arms[0]]!, section.arms[experiment.arms[1]]!] as const;
    return interleaveRetrieve({ experiment, arms, key, k, secret: section.secret! }, params, ctx, fed, runtime);
  }
  // A split arm, or an arm a request forced: that arm alone, named in the answer.
  const run = await runArm(section.arms[assignment.arm]!, params, ctx, fed);
  reportArm(runtime.hooks, experiment.id, assignment.arm, 'served', run);
  if (!run.ok) throw run.error;
  return tagged(run.answer, assignmentMeta(assignment));
}

function namesOwnSetup(params: JsonObject, ctx: CallContext): boolean {
  if (ctx.headers[TARGET_HEADER] !== undefined) return true;
  const meta = isJsonObject(params._meta) ? params._meta : undefined;
  const vendor = meta?.[VENDOR_KEY];
  return isJsonObject(vendor) && SETUP_FIELDS.some((field) => vendor[field] !== undefined && vendor[field] !== null);
}

/**
 * The authenticated client, for `assignBy: { principal: true }`: the request path sets
 * `CallContext.principal` once it authenticates clients; until then there is none and such an
 * experiment assigns nobody.
 */
function principalOf(ctx: CallContext): string | undefined {
  const principal = (ctx as CallContext & { principal?: { id?: unknown } }).principal;
  return typeof principal?.id === 'string' && principal.id.length > 0 ? principal.id : undefined;
}
