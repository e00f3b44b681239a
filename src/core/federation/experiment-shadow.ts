/**
 * `shadow` experiments: the primary arm answers the client; on a sampled share of requests the
 * shadow arm runs the same request alongside, under its own deadline (`deadlineMs`), concurrency
 * cap and budget (experiments/shadow-gate.ts), on a signal of its own. The primary never waits
 * for it, never sees its result and cannot fail because of it: a shadow failure or timeout is
 * only counted. When both have finished, the pair is compared (experiments/compare.ts) and
 * reported through the experiment hooks (metrics, the JSON-lines file, the report).
 */
import type { ArmConfig, ShadowExperiment } from '../experiments/arms.js';
import { comparePair, type ArmAnswer } from '../experiments/compare.js';
import type { ExperimentRuntime } from '../experiments/runtime.js';
import type { JsonObject } from '../protocol/jsonrpc.js';
import type { CallContext } from '../service/contract.js';
import type { FederationContext } from './context.js';
import { hitIds, reportArm, runArm, type ArmRun } from './experiment-arm.js';

export interface ShadowRequest {
  experiment: ShadowExperiment;
  primary: ArmConfig;
  shadow: ArmConfig;
  /** The assignment sampled this request for a shadow run. */
  sampled: boolean;
  /** The request's k, the cutoff of overlap@k. */
  k: number;
}

export async function shadowRetrieve(
  request: ShadowRequest,
  params: JsonObject,
  ctx: CallContext,
  fed: FederationContext,
  runtime: ExperimentRuntime,
): Promise<JsonObject> {
  const { experiment } = request;
  const shadowRun = request.sampled ? startShadow(request, params, ctx, fed, runtime) : undefined;
  const primary = await runArm(request.primary, params, ctx, fed);
  reportArm(runtime.hooks, experiment.id, experiment.primary, 'served', primary);
  if (shadowRun) {
    void shadowRun
      .then((shadow) => compare(request, primary, shadow, runtime))
      .catch((err: unknown) => fed.logger.warn({ experiment: experiment.id, err: String(err) }, 'shadow comparison not recorded'));
  }
  if (!primary.ok) throw primary.error;
  return primary.answer;
}

/** The shadow run, or undefined when the gate refuses it (counted). Never rejects. */
function startShadow(
  request: ShadowRequest,
  params: JsonObject,
  ctx: CallContext,
  fed: FederationContext,
  runtime: ExperimentRuntime,
): Promise<ArmRun> | undefined {
  const { experiment } = request;
  const gate = runtime.gate(experiment);
  const admitted = gate.tryAcquire(runtime.now());
  if (admitted !== 'ok') {
    runtime.hooks.onShadowSkipped(experiment.id, admitted);
    return undefined;
  }
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort('deadline'), experiment.deadlineMs);
  const shadowCtx: CallContext = {
    ...ctx,
    signal: controller.signal,
    deadlineAt: performance.now() + experiment.deadlineMs,
    deadlineMs: experiment.deadlineMs,
    // The client hears nothing of the shadow: no progress, no logs.
    progress: undefined,
    log: undefined,
  };
  return runArm(request.shadow, params, shadowCtx, fed).finally(() => {
    clearTimeout(timer);
    gate.release();
  });
}

function compare(request: ShadowRequest, primary: ArmRun, shadow: ArmRun, runtime: ExperimentRuntime): void {
  const { experiment } = request;
  reportArm(runtime.hooks, experiment.id, experiment.shadow, 'shadow', shadow);
  const side = (run: ArmRun): ArmAnswer =>
    run.ok ? { ids: hitIds(run.answer), latencyMs: run.latencyMs } : { ids: [], latencyMs: run.latencyMs, error: String(run.error) };
  runtime.hooks.onShadowComparison(
    {
      experiment: experiment.id,
      primary: experiment.primary,
      shadow: experiment.shadow,
      k: request.k,
      at: new Date().toISOString(),
      ...comparePair(side(primary), side(shadow), request.k),
    },
    experiment.comparisonsFile,
  );
}
