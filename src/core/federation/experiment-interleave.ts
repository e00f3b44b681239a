/**
 * `interleave` experiments: both arms answer the request (concurrently), their top k are merged by
 * team draft (experiments/interleave.ts) into one list of k hits, and the answer carries a signed
 * attribution token (`_meta["x-rcpgw"].attribution`, experiments/attribution.ts) naming each hit's
 * team and the engines that returned it. Clients echo the token in `feedback`'s `_meta`
 * (experiment-feedback.ts), so any replica can credit the impression.
 *
 * The coin flips are seeded by (experiment, assignment key, query): one user asking one query gets
 * the same interleaving from every replica. Hit scores become the rank score 1 / rank (the two
 * arms' scores are not on one scale); the arm's own score is kept in `meta.armScore`. When one arm
 * fails, the other's answer is served alone, without a token (no impression is recorded); when
 * both fail, the first arm's error is the answer. An interleaved answer has no `nextCursor`, and
 * no progress is relayed (two fan-outs would interleave two progress sequences on one token).
 */
import type { ArmConfig, InterleaveExperiment } from '../experiments/arms.js';
import { uniformSlots } from '../experiments/assignment.js';
import { impressionNonce, signAttribution } from '../experiments/attribution.js';
import { teamDraft } from '../experiments/interleave.js';
import { seededRandom } from '../experiments/random.js';
import type { ExperimentRuntime } from '../experiments/runtime.js';
import { isJsonObject, type JsonObject } from '../protocol/jsonrpc.js';
import type { CallContext } from '../service/contract.js';
import type { FederationContext } from './context.js';
import { reportArm, runArm, tagged } from './experiment-arm.js';

export interface InterleaveRequest {
  experiment: InterleaveExperiment;
  arms: readonly [ArmConfig, ArmConfig];
  /** The assignment key (seeds the coin flips with the query). */
  key: string;
  k: number;
  secret: string;
}

export async function interleaveRetrieve(
  request: InterleaveRequest,
  params: JsonObject,
  ctx: CallContext,
  fed: FederationContext,
  runtime: ExperimentRuntime,
): Promise<JsonObject> {
  const started = performance.now();
  const { experiment } = request;
  const [nameA, nameB] = experiment.arms;
  // Two fan-outs relaying progress to one token would interleave two progress sequences: none is sent.
  const armCtx: CallContext = ctx.progress === undefined ? ctx : { ...ctx, progress: undefined };
  const [a, b] = await Promise.all([runArm(request.arms[0], params, armCtx, fed), runArm(request.arms[1], params, armCtx, fed)]);
  reportArm(runtime.hooks, experiment.id, nameA, 'interleaved', a);
  reportArm(runtime.hooks, experiment.id, nameB, 'interleaved', b);
  if (!a.ok && !b.ok) throw a.error;
  if (!a.ok || !b.ok) {
    const [served, name] = a.ok ? [a.answer, nameA] : [(b as { answer: JsonObject }).answer, nameB];
    // No cursor: a later page would not be interleaved, so it could not continue this list.
    const { nextCursor: _cursor, ...rest } = served;
    return tagged(rest, { experiment: experiment.id, arm: name, interleaved: false });
  }
  const query = typeof params.query === 'string' ? params.query : JSON.stringify(params.query ?? null);
  const [seed] = uniformSlots(experiment.id, `${request.key}\u0000${query}`);
  const merged = teamDraft(hitsOf(a.answer), hitsOf(b.answer), request.k, seededRandom(Math.floor(seed * 2 ** 31)), (hit) =>
    String(hit.id),
  );
  const hits = merged.hits.map(({ item }, i) => rankScored(item, i));
  const sources = new Map(merged.hits.map(({ id, item }) => [id, enginesOf(item)] as const));
  const attribution = signAttribution(
    { experiment: experiment.id, arms: [nameA, nameB], teams: merged.teams, issuedAt: Date.now(), sources, nonce: impressionNonce() },
    request.secret,
  );
  return {
    hits,
    usage: { candidates: candidatesOf(a.answer) + candidatesOf(b.answer), latencyMs: Math.round(performance.now() - started) },
    _meta: {
      ...mergedMeta(a.answer, b.answer),
      fusion: 'team-draft',
      deadlineMs: ctx.deadlineMs,
      'x-rcpgw': { experiment: experiment.id, arm: `${nameA}+${nameB}`, attribution },
    },
  };
}

function candidatesOf(answer: JsonObject): number {
  const usage = isJsonObject(answer.usage) ? answer.usage : {};
  return typeof usage.candidates === 'number' ? usage.candidates : 0;
}

function hitsOf(answer: JsonObject): JsonObject[] {
  return Array.isArray(answer.hits) ? answer.hits.filter(isJsonObject) : [];
}

function rankScored(hit: JsonObject, index: number): JsonObject {
  const meta = isJsonObject(hit.meta) ? hit.meta : {};
  return { ...hit, score: 1 / (index + 1), meta: { ...meta, armScore: hit.score ?? null } };
}

/** The engines that returned a fused hit (`meta.engines` when several did, else `meta.engine`). */
function enginesOf(hit: JsonObject): string[] {
  const meta = isJsonObject(hit.meta) ? hit.meta : {};
  if (Array.isArray(meta.engines)) return meta.engines.flatMap((e) => (isJsonObject(e) && typeof e.engine === 'string' ? [e.engine] : []));
  return typeof meta.engine === 'string' ? [meta.engine] : [];
}

/** Engines, degraded legs and the trace id of the two arms' answers, together. */
function mergedMeta(a: JsonObject, b: JsonObject): JsonObject {
  const metaA = isJsonObject(a._meta) ? a._meta : {};
  const metaB = isJsonObject(b._meta) ? b._meta : {};
  const list = (value: unknown): unknown[] => (Array.isArray(value) ? value : []);
  const engines = [...new Set([...list(metaA.engines), ...list(metaB.engines)].map(String))].sort();
  const degraded = [...list(metaA.degraded), ...list(metaB.degraded)];
  return {
    engines,
    ...(degraded.length > 0 ? { degraded } : {}),
    ...(metaA.traceId !== undefined ? { traceId: metaA.traceId } : {}),
  };
}
