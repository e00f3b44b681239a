/**
 * Fan-out of one read method to several engines (§16.2): per-leg params, progress and log
 * routing; every leg runs through `runLeg` (leg.ts). Collects successes and failures (it rejects
 * only for a fault of the gateway's own code or of a caller's hook); then the §16.2 accounting of
 * what failed.
 */
import { ErrorCode, RcpError } from '../protocol/errors.js';
import type { JsonObject } from '../protocol/jsonrpc.js';
import type { CallContext } from '../service/contract.js';
import { toClientError, UpstreamError } from '../upstream/errors.js';
import type { Engine } from '../upstream/engine.js';
import type { DegradedEntry, FederationContext } from './context.js';
import { failureOf, legScope, runLeg, type LegFailure, type LegOutcome, type LegScope } from './leg.js';

export interface LegSuccess {
  engine: Engine;
  result: JsonObject;
}

export interface FanoutOutcome {
  successes: LegSuccess[];
  failures: LegFailure[];
  traceId: string;
  /** What the resilience layers did on the way (retries), for `usage.notes`. */
  notes: string[];
}

export interface FanoutPlan {
  method: string;
  engines: readonly Engine[];
  /** Per-engine params (without `_meta`; the leg adds it). */
  paramsFor: (engine: Engine) => JsonObject;
  onLegProgress?: (engine: Engine, frame: JsonObject) => void;
  /** A leg finished; `result` is its answer when it succeeded (for running partial fusion, §9). */
  onLegDone?: (engine: Engine, ok: boolean, reason?: string, result?: JsonObject) => void;
  onLegLog?: (engine: Engine, frame: JsonObject) => void;
  /** Shape check of an answer, run inside the engine's breaker (a malformed answer is an engine fault). */
  validate?: (result: JsonObject) => void;
}

/**
 * Promise chaining, not async/await: every request passes here, and each `await` or async
 * function is one more promise and microtask per leg (bench/RESULTS.md, 2026-12-02, promises).
 */
export function fanout(plan: FanoutPlan, ctx: CallContext, fed: FederationContext): Promise<FanoutOutcome> {
  try {
    return startLegs(plan, ctx, fed);
  } catch (err) {
    // No hop budget left (legScope), or the caller's `paramsFor` threw: a rejection, as from any async step.
    return Promise.reject(err);
  }
}

function startLegs(plan: FanoutPlan, ctx: CallContext, fed: FederationContext): Promise<FanoutOutcome> {
  const scope = legScope(ctx, fed);
  const outcome: FanoutOutcome = { successes: [], failures: [], traceId: scope.trace.traceId, notes: scope.notes };
  fed.hooks.onFanout?.(plan.method, plan.engines.length);
  // The join is a count of legs still out, settled by the last one to finish: one reaction per
  // leg and no Promise.all (which adds a reaction per leg and one more promise for its result).
  let out = 0;
  let settle!: (value: FanoutOutcome) => void;
  let fail!: (err: unknown) => void;
  const joined = new Promise<FanoutOutcome>((resolve, reject) => {
    settle = resolve;
    fail = reject;
  });
  const finished = (engine: Engine, done: LegOutcome): void => {
    try {
      recordLeg(plan, outcome, engine, done);
    } catch (err) {
      fail(err); // a fault of the gateway's own code (a hook): the fan-out rejects, as Promise.all would
      return;
    }
    if (--out === 0) settle(outcome);
  };
  try {
    startEach(plan, ctx, fed, scope, outcome, (engine, leg) => {
      out++;
      leg.then((done) => finished(engine, done), fail);
    });
  } catch (err) {
    // The caller's `paramsFor` (or an `onLegDone` hook) threw after some legs were sent: nobody
    // will read `joined`, so a later fault of one of those legs must not surface as an unhandled
    // rejection.
    joined.catch(() => undefined);
    throw err;
  }
  if (out === 0) settle(outcome);
  return joined;
}

/** Each engine's leg started (`started`), or its failure recorded when no time is left to send it. */
function startEach(
  plan: FanoutPlan,
  ctx: CallContext,
  fed: FederationContext,
  scope: LegScope,
  outcome: FanoutOutcome,
  started: (engine: Engine, leg: Promise<LegOutcome>) => void,
): void {
  for (const engine of plan.engines) {
    if (ctx.deadlineAt - performance.now() - fed.settings.deadlineReserveMs <= 0) {
      // Not sent at all: no leg to time or count, only a failure to report.
      outcome.failures.push(failureOf(engine, new UpstreamError('timeout', 'no time left before the deadline'), ctx));
      plan.onLegDone?.(engine, false, 'deadline');
      continue;
    }
    const leg = runLeg(scope, engine, plan.method, plan.paramsFor(engine), {
      onProgress: plan.onLegProgress ? (frame) => plan.onLegProgress!(engine, frame) : undefined,
      onLog: plan.onLegLog ? (frame) => plan.onLegLog!(engine, frame) : undefined,
      validate: plan.validate,
    });
    started(engine, leg);
  }
}

function recordLeg(plan: FanoutPlan, outcome: FanoutOutcome, engine: Engine, leg: LegOutcome): void {
  if (leg.ok) {
    outcome.successes.push({ engine, result: leg.result });
    plan.onLegDone?.(engine, true, undefined, leg.result);
  } else {
    outcome.failures.push(leg.failure);
    plan.onLegDone?.(engine, false, leg.failure.reason);
  }
}

/**
 * §16.2 accounting of the legs that failed: each becomes a `_meta.degraded` entry and a
 * `usage.notes` line; a failing `required` engine fails the whole call with that engine's code.
 */
export function accountFailures(failures: readonly LegFailure[], fed: FederationContext, notes: string[]): DegradedEntry[] {
  const degraded: DegradedEntry[] = [];
  for (const failure of failures) {
    degraded.push({
      engine: failure.engine,
      code: failure.code,
      reason: failure.reason,
      ...(failure.detail ? { detail: failure.detail } : {}),
    });
    notes.push(`engine ${failure.engine} dropped: ${failure.reason} (${failure.code})`);
    fed.hooks.onDegraded?.(failure.engine, failure.reason);
    const engine = fed.engines.find((e) => e.id === failure.engine);
    if (engine?.required) throw toClientError(failure.error, engine.id);
  }
  return degraded;
}

/**
 * No engine answered: -32010, never an empty success (§16.2, "no results" and "nothing answered"
 * must differ), or -32014 when every leg ran out of time (§13.1). When every engine refused the
 * request as the caller's own error (§12.2: not retryable), that error is the answer, with
 * `retryable: false` and what the engines said: retrying it, or blaming the engines, cannot help.
 */
export function nothingAnswered(failures: readonly LegFailure[], degraded: readonly DegradedEntry[], ctx: CallContext): RcpError {
  const rejected = clientRejection(failures);
  if (rejected) return rejected;
  const allDeadline = failures.length > 0 && failures.every((f) => f.code === ErrorCode.Timeout);
  return new RcpError(
    allDeadline ? ErrorCode.Timeout : ErrorCode.BackendUnavailable,
    allDeadline ? 'no engine answered before the deadline' : 'every engine failed',
    { retryable: true, deadlineMs: ctx.deadlineMs, engines: degraded.map((d) => ({ engine: d.engine, code: d.code, reason: d.reason })) },
  );
}

/**
 * Every leg failed as a client error: the code most engines gave (ties: the first engine's, in
 * engine-id order), its message and conventional `data` fields (`field`, `option`) from the
 * first engine that gave it, and every engine's own answer in `data.engines`.
 */
function clientRejection(failures: readonly LegFailure[]): RcpError | undefined {
  if (failures.length === 0 || !failures.every((f) => f.error.isClientError)) return undefined;
  const ordered = [...failures].sort((a, b) => (a.engine < b.engine ? -1 : a.engine > b.engine ? 1 : 0));
  const counts = new Map<number, number>();
  for (const f of ordered) counts.set(f.code, (counts.get(f.code) ?? 0) + 1);
  let code = ordered[0]!.code;
  for (const [candidate, count] of counts) if (count > counts.get(code)!) code = candidate;
  const first = ordered.find((f) => f.code === code)!;
  const remote = first.error.remote!;
  const data: Record<string, unknown> = { retryable: false };
  for (const key of ['field', 'option'] as const) {
    const value = remote.data?.[key];
    if (typeof value === 'string') data[key] = value.slice(0, 300);
  }
  data.engines = ordered.map((f) => ({
    engine: f.engine,
    code: f.code,
    message: f.error.remote!.message.slice(0, 300),
    ...conventionalData(f.error.remote!.data),
  }));
  const unanimous = counts.size === 1 ? 'every engine' : `${counts.get(code)} of ${ordered.length} engines`;
  return new RcpError(code, `${unanimous} rejected the request: ${remote.message.slice(0, 200)}`, data);
}

/** An engine's §12.1 `field`/`option`/`detail`, strings only and short: engines are untrusted (§15.1). */
function conventionalData(data: Record<string, unknown> | undefined): { data?: Record<string, string> } {
  if (data === undefined) return {};
  const out: Record<string, string> = {};
  for (const key of ['field', 'option', 'detail'] as const) {
    const value = data[key];
    if (typeof value === 'string') out[key] = value.slice(0, 300);
  }
  return Object.keys(out).length > 0 ? { data: out } : {};
}
