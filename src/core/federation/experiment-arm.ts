/**
 * Serving a request with an arm (core/experiments/arms.ts): the arm becomes the request's
 * gateway options — engines, weights, fusion, rrfK, dedup in `_meta["x-rcpgw"]` (vendor.ts) and
 * the fusion depth in the settings — and the ordinary federated retrieve runs with them, so an
 * arm answers exactly as a gateway configured that way would (and as `rcp-gateway eval` scores
 * it). Anything the arm leaves out takes the gateway's value.
 */
import type { ArmConfig } from '../experiments/arms.js';
import type { ArmOutcome, ExperimentHooks } from '../experiments/hooks.js';
import { ErrorCode, RcpError } from '../protocol/errors.js';
import { isJsonObject, type JsonObject } from '../protocol/jsonrpc.js';
import type { CallContext } from '../service/contract.js';
import type { FederationContext } from './context.js';
import { federatedRetrieve } from './retrieve.js';
import { VENDOR_KEY } from './vendor.js';

/** One arm's run: its answer or its error, and how long it took. */
export type ArmRun = { ok: true; answer: JsonObject; latencyMs: number } | { ok: false; error: unknown; latencyMs: number };

/** The request's params with the arm's setup in the vendor key (the client's other vendor fields kept). */
export function armParams(arm: ArmConfig, params: JsonObject, settings: FederationContext['settings']): JsonObject {
  const meta = isJsonObject(params._meta) ? params._meta : {};
  const vendor = isJsonObject(meta[VENDOR_KEY]) ? meta[VENDOR_KEY] : {};
  const setup: JsonObject = {
    engines: arm.engines,
    weights: arm.weights ?? {},
    fusion: arm.fusion ?? settings.fusion,
    rrfK: arm.rrfK ?? settings.rrfK,
    dedup: arm.dedup ?? settings.dedup,
  };
  return { ...params, _meta: { ...meta, [VENDOR_KEY]: { ...vendor, ...setup } } };
}

/** The federation context with the arm's fusion depth. */
export function armFederation(arm: ArmConfig, fed: FederationContext): FederationContext {
  const headroom = arm.fusionHeadroom ?? fed.settings.fusionHeadroom;
  const depth = arm.fusionDepth ?? fed.settings.fusionDepth;
  if (headroom === fed.settings.fusionHeadroom && depth === fed.settings.fusionDepth) return fed;
  return { ...fed, settings: { ...fed.settings, fusionHeadroom: headroom, fusionDepth: depth } };
}

export async function runArm(arm: ArmConfig, params: JsonObject, ctx: CallContext, fed: FederationContext): Promise<ArmRun> {
  const started = performance.now();
  try {
    const answer = await federatedRetrieve(armParams(arm, params, fed.settings), ctx, armFederation(arm, fed));
    return { ok: true, answer, latencyMs: performance.now() - started };
  } catch (error) {
    return { ok: false, error, latencyMs: performance.now() - started };
  }
}

/** The hit ids of an answer, best first. */
export function hitIds(answer: JsonObject): string[] {
  return Array.isArray(answer.hits) ? answer.hits.map((hit) => (isJsonObject(hit) ? String(hit.id) : '')) : [];
}

/**
 * A run the gateway itself refused for what the client sent (§12: -32600, -32602, e.g. a bad or
 * foreign cursor): it says nothing about the arm, whose engines never saw it, so it is no outcome
 * of the arm. A rejection the arm's engines gave (relayed with `data.engines`) is one: another
 * arm's engines might have taken the same request.
 */
function refusedAsSent(run: ArmRun): boolean {
  if (run.ok || !(run.error instanceof RcpError)) return false;
  const { code, data } = run.error;
  return (code === ErrorCode.InvalidParams || code === ErrorCode.InvalidRequest) && !(data !== undefined && 'engines' in data);
}

/** Records the run as the arm's outcome, unless it was refused for what the client sent. */
export function reportArm(hooks: Required<ExperimentHooks>, experiment: string, arm: string, role: ArmOutcome['role'], run: ArmRun): void {
  if (!refusedAsSent(run)) hooks.onArmOutcome(armOutcome(experiment, arm, role, run));
}

function armOutcome(experiment: string, arm: string, role: ArmOutcome['role'], run: ArmRun): ArmOutcome {
  const answer = run.ok ? run.answer : undefined;
  const meta = answer && isJsonObject(answer._meta) ? answer._meta : undefined;
  return {
    experiment,
    arm,
    role,
    ok: run.ok,
    degraded: Array.isArray(meta?.degraded) && meta.degraded.length > 0,
    empty: answer !== undefined && hitIds(answer).length === 0,
    latencyMs: run.latencyMs,
  };
}

/** The answer with `extra` merged into its `_meta["x-rcpgw"]` (which names the experiment and arm). */
export function tagged(answer: JsonObject, extra: JsonObject): JsonObject {
  const meta = isJsonObject(answer._meta) ? answer._meta : {};
  const vendor = isJsonObject(meta[VENDOR_KEY]) ? meta[VENDOR_KEY] : {};
  return { ...answer, _meta: { ...meta, [VENDOR_KEY]: { ...vendor, ...extra } } };
}
