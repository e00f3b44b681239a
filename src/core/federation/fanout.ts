/**
 * Fan-out of one read method to several engines (§16.2): per-leg params, forwarded deadline and
 * federation path, per-leg timeout, trace headers, progress routing; collects successes and
 * failures without ever rejecting. Each leg goes through the engine's breaker and limiter.
 */
import { ErrorCode, RcpError } from '../protocol/errors.js';
import { isJsonObject, type JsonObject } from '../protocol/jsonrpc.js';
import type { CallContext } from '../service/contract.js';
import { abortReasonOf } from '../service/contract.js';
import { toClientError, UpstreamError } from '../upstream/errors.js';
import type { Engine } from '../upstream/engine.js';
import type { DegradedEntry, FederationContext } from './context.js';
import { traceContext, type TraceContext } from './trace.js';
import { withRetry } from '../resilience/retry.js';
import { retryGuard } from '../resilience/retrying.js';

export interface LegSuccess {
  engine: Engine;
  result: JsonObject;
}

export interface LegFailure extends DegradedEntry {
  error: UpstreamError;
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
  /** Per-engine params (without `_meta`; the fan-out adds it). */
  paramsFor: (engine: Engine) => JsonObject;
  onLegProgress?: (engine: Engine, frame: JsonObject) => void;
  /** A leg finished; `result` is its answer when it succeeded (for running partial fusion, §9). */
  onLegDone?: (engine: Engine, ok: boolean, reason?: string, result?: JsonObject) => void;
  onLegLog?: (engine: Engine, frame: JsonObject) => void;
  /** Shape check of an answer, run inside the engine's breaker (a malformed answer is an engine fault). */
  validate?: (result: JsonObject) => void;
}

/** §16.2: the federation path/depth to forward, or why forwarding is not allowed. */
export function federationForward(ctx: CallContext, fed: FederationContext): { depth: number; path: string[] } {
  const incoming = ctx.meta.federation;
  const depth = incoming?.depth ?? fed.settings.federationDepth;
  const path = incoming?.path ?? [];
  return { depth: depth - 1, path: [...path, fed.identity] };
}

/** Engines already on the path would form a cycle (§16.2): skip them. */
export function onPath(engine: Engine, path: readonly string[]): boolean {
  return path.includes(engine.id) || (engine.server !== undefined && path.includes(engine.server.name));
}

export async function fanout(plan: FanoutPlan, ctx: CallContext, fed: FederationContext): Promise<FanoutOutcome> {
  const trace = traceContext(ctx.headers, ctx.meta.traceId);
  const forward = federationForward(ctx, fed);
  const reserve = fed.settings.deadlineReserveMs;
  const successes: LegSuccess[] = [];
  const failures: LegFailure[] = [];
  const notes: string[] = [];
  fed.hooks.onFanout?.(plan.method, plan.engines.length);

  await Promise.all(plan.engines.map(async (engine) => {
    const started = performance.now();
    const remaining = ctx.deadlineAt - started - reserve;
    if (remaining <= 0) {
      const error = new UpstreamError('timeout', 'no time left before the deadline');
      failures.push(failureOf(engine, error, ctx));
      plan.onLegDone?.(engine, false, 'deadline');
      return;
    }
    try {
      const result = await callEngine(engine, plan.method, plan.paramsFor(engine), ctx, fed, notes, {
        trace,
        forward,
        onProgress: plan.onLegProgress ? (frame) => plan.onLegProgress!(engine, frame) : undefined,
        onLog: plan.onLegLog ? (frame) => plan.onLegLog!(engine, frame) : undefined,
        validate: plan.validate,
      });
      successes.push({ engine, result });
      fed.hooks.onLeg?.(engine.id, plan.method, 0, performance.now() - started);
      plan.onLegDone?.(engine, true, undefined, result);
    } catch (err) {
      const error = err instanceof UpstreamError ? err : new UpstreamError('malformed', (err as Error).message);
      const failure = failureOf(engine, error, ctx);
      failures.push(failure);
      fed.hooks.onLeg?.(engine.id, plan.method, failure.code, performance.now() - started);
      plan.onLegDone?.(engine, false, failure.reason);
    }
  }));
  return { successes, failures, traceId: trace.traceId, notes };
}

export interface EngineCallPlan {
  /** Computed once per request and shared by its legs. */
  trace?: TraceContext;
  forward?: { depth: number; path: string[] };
  onProgress?: (frame: JsonObject) => void;
  onLog?: (frame: JsonObject) => void;
  validate?: (result: JsonObject) => void;
  /** A write the caller has shown safe to repeat (§7.10) may be retried like a read. */
  idempotent?: boolean;
}

/**
 * One call to one engine, for fan-out legs and routed calls alike: each attempt carries the
 * budget left at the moment it is sent (a retry gets less) as a strictly smaller
 * `_meta.deadlineMs`, the federation path and the trace (§16.2), through the retry layer.
 * Rejects with UpstreamError.
 */
export function callEngine(
  engine: Engine, method: string, params: JsonObject, ctx: CallContext, fed: FederationContext, notes: string[],
  plan: EngineCallPlan = {},
): Promise<JsonObject> {
  const trace = plan.trace ?? traceContext(ctx.headers, ctx.meta.traceId);
  const forward = plan.forward ?? federationForward(ctx, fed);
  const callerMeta = isJsonObject(params._meta) ? params._meta : {};
  const attempt = (): Promise<JsonObject> => {
    const left = ctx.deadlineAt - performance.now() - fed.settings.deadlineReserveMs;
    if (left <= 0) return Promise.reject(new UpstreamError('timeout', 'no time left before the deadline'));
    return engine.call(method, {
      ...params,
      _meta: { ...callerMeta, deadlineMs: Math.max(1, Math.floor(left) - 1), federation: forward, traceId: trace.traceId },
    }, {
      signal: ctx.signal,
      timeoutMs: Math.floor(left),
      headers: { traceparent: trace.traceparent },
      onProgress: plan.onProgress,
      onLog: plan.onLog,
      validate: plan.validate,
    });
  };
  return withRetry(attempt, { ...retryGuard(method, engine, ctx, fed, notes), idempotent: plan.idempotent ?? false });
}

/** Classify a failed leg for `_meta.degraded` (engine id + code + reason). */
export function failureOf(engine: Engine, error: UpstreamError, ctx: CallContext): LegFailure {
  let reason: string = error.reason;
  let code = error.code;
  if (error.reason === 'aborted') {
    const why = abortReasonOf(ctx.signal);
    if (why === 'deadline') {
      reason = 'deadline';
      code = ErrorCode.Timeout;
    } else if (why) reason = why;
  } else if (error.cancelledByEngine) {
    reason = 'engine-cancelled'; // the engine gave up on its own: this leg failed (noted), not the call
  } else if (error.reason === 'remote-error' && error.remote) {
    reason = `engine-error`;
  }
  return { engine: engine.id, code, reason, detail: error.message.slice(0, 300), error };
}

/**
 * §16.2 accounting of the legs that failed: each becomes a `_meta.degraded` entry and a
 * `usage.notes` line; a failing `required` engine fails the whole call with that engine's code.
 */
export function accountFailures(failures: readonly LegFailure[], fed: FederationContext, notes: string[]): DegradedEntry[] {
  const degraded: DegradedEntry[] = [];
  for (const failure of failures) {
    degraded.push({ engine: failure.engine, code: failure.code, reason: failure.reason, ...(failure.detail ? { detail: failure.detail } : {}) });
    notes.push(`engine ${failure.engine} dropped: ${failure.reason} (${failure.code})`);
    fed.hooks.onDegraded?.(failure.engine, failure.reason);
    const engine = fed.engines.find((e) => e.id === failure.engine);
    if (engine?.required) throw toClientError(failure.error, engine.id);
  }
  return degraded;
}

/**
 * No engine answered: -32010, never an empty success (§16.2, "no results" and "nothing answered"
 * must differ), or -32014 when every leg ran out of time (§13.1).
 */
export function nothingAnswered(failures: readonly LegFailure[], degraded: readonly DegradedEntry[], ctx: CallContext): RcpError {
  const allDeadline = failures.length > 0 && failures.every((f) => f.code === ErrorCode.Timeout);
  return new RcpError(allDeadline ? ErrorCode.Timeout : ErrorCode.BackendUnavailable,
    allDeadline ? 'no engine answered before the deadline' : 'every engine failed',
    { retryable: true, deadlineMs: ctx.deadlineMs, engines: degraded.map((d) => ({ engine: d.engine, code: d.code, reason: d.reason })) });
}

