/**
 * One leg: one call of a client request to one engine, for fan-out legs, routed calls and
 * writes alike. `runLeg` times the call, sends it through the engine's pipeline (retry,
 * deadline, fail-fast, limiter, breaker: upstream/pipeline.ts), reports it to the hooks, and
 * turns any failure of the engine into an UpstreamError classified for `_meta.degraded`. It
 * rejects only for a fault of the gateway's own code (-32603, logged with its stack).
 *
 * Every leg carries the federation path and the trace (§16.2), and the request's deadline less
 * the gateway's reserve; each attempt is told what is left of it as `_meta.deadlineMs`.
 */
import { ErrorCode, RcpError } from '../protocol/errors.js';
import { withMeta } from '../protocol/copy.js';
import { isJsonObject, type JsonObject } from '../protocol/jsonrpc.js';
import type { CallContext } from '../service/contract.js';
import { abortReasonOf } from '../service/contract.js';
import { describeRetry, type RetryPolicy } from '../resilience/retry.js';
import type { UpstreamCall } from '../upstream/call.js';
import type { Engine } from '../upstream/engine.js';
import { UpstreamError, publicDetail } from '../upstream/errors.js';
import type { DegradedEntry, FederationContext } from './context.js';
import { logLegFailure } from './sanitize.js';
import type { TraceContext } from '../protocol/trace.js';

export interface LegFailure extends DegradedEntry {
  error: UpstreamError;
}

/** What every leg of one client request shares, computed once per request. */
export interface LegScope {
  ctx: CallContext;
  fed: FederationContext;
  trace: TraceContext;
  forward: { depth: number; path: string[] };
  /** What the resilience layers did on the way (retries), for `usage.notes`. */
  notes: string[];
}

export interface LegOptions {
  onProgress?: (frame: JsonObject) => void;
  onLog?: (frame: JsonObject) => void;
  /** Shape check of the answer, run inside the engine's breaker (a malformed answer is an engine fault). */
  validate?: (result: JsonObject) => void;
  /** A write the caller has shown safe to repeat (§7.10) may be retried like a read. */
  idempotent?: boolean;
}

export type LegOutcome = { ok: true; result: JsonObject } | { ok: false; error: UpstreamError; failure: LegFailure };

/** Every forwarded call starts here, so none can leave without the §16.2 hop budget (throws at depth 0). */
export function legScope(ctx: CallContext, fed: FederationContext): LegScope {
  return { ctx, fed, trace: ctx.trace, forward: federationForward(ctx, fed), notes: [] };
}

/**
 * §16.2 hop budget: an aggregator "MUST NOT forward when depth reaches 0 — it answers from its
 * own index only". The gateway has no index of its own, so any method it would forward (fused,
 * routed or written) is refused before an engine is chosen.
 */
export function requireHopBudget(ctx: CallContext, fed: FederationContext): number {
  const depth = ctx.meta.federation?.depth ?? fed.settings.federationDepth;
  if (depth <= 0) {
    throw new RcpError(ErrorCode.BackendUnavailable, 'federation depth exhausted: the gateway has no index of its own', {
      detail: '_meta.federation.depth is 0',
      retryable: false,
    });
  }
  return depth;
}

/** §16.2: the federation path/depth to forward: depth decremented, the gateway's identity appended. */
export function federationForward(ctx: CallContext, fed: FederationContext): { depth: number; path: string[] } {
  const depth = requireHopBudget(ctx, fed);
  const path = ctx.meta.federation?.path ?? [];
  return { depth: depth - 1, path: [...path, fed.identity] };
}

/** Engines already on the path would form a cycle (§16.2): skip them. */
export function onPath(engine: Engine, path: readonly string[]): boolean {
  return path.includes(engine.id) || (engine.server !== undefined && path.includes(engine.server.name));
}

/** One leg: the engine called through its pipeline, the outcome timed and reported; rejects only on a fault of the gateway's own code. */
export function runLeg(scope: LegScope, engine: Engine, method: string, params: JsonObject, options: LegOptions = {}): Promise<LegOutcome> {
  const started = performance.now();
  const { fed } = scope;
  let answer: Promise<JsonObject>;
  try {
    answer = engine.call(legCall(scope, engine, method, params, options));
  } catch (err) {
    answer = Promise.reject(err);
  }
  // One reaction, not async/await: every leg of every request passes here.
  return answer.then(
    (result): LegOutcome => {
      fed.hooks.onLeg?.(engine.id, method, 0, performance.now() - started);
      return { ok: true, result };
    },
    (err: unknown): LegOutcome => {
      // Only an UpstreamError is about the engine; anything else is a fault of the gateway's own
      // code, which must surface as one (-32603, with its stack in the log), never as the engine's
      // `malformed` answer in `_meta.degraded`.
      if (!(err instanceof UpstreamError)) throw gatewayFault(fed, err, { engine: engine.id, method });
      const failure = failureOf(engine, err, scope.ctx);
      logLegFailure(fed, engine.id, method, failure);
      fed.hooks.onLeg?.(engine.id, method, failure.code, performance.now() - started);
      return { ok: false, error: err, failure };
    },
  );
}

/** Log an exception of the gateway's own code with its stack; the client gets -32603. */
export function gatewayFault(fed: FederationContext, err: unknown, where: Record<string, unknown>): RcpError {
  if (err instanceof RcpError) return err;
  const error = err instanceof Error ? err : new Error(String(err));
  fed.logger.error({ ...where, err: { message: error.message, stack: error.stack } }, 'gateway error');
  return new RcpError(ErrorCode.InternalError, 'internal error', { detail: 'gateway error' });
}

function legCall(scope: LegScope, engine: Engine, method: string, params: JsonObject, options: LegOptions): UpstreamCall {
  const { ctx, fed, trace, forward } = scope;
  return {
    method,
    params: withMeta(params, { federation: forward, traceId: trace.traceId }),
    deadlineAt: ctx.deadlineAt - fed.settings.deadlineReserveMs,
    signal: ctx.signal,
    headers: { traceparent: trace.traceparent },
    onProgress: options.onProgress,
    onLog: options.onLog,
    validate: options.validate,
    retry: retryPolicy(scope, engine, method, options.idempotent ?? false),
  };
}

/** The gateway-wide retry budget and backoff, with a `usage.notes` line and a metric per decision. */
function retryPolicy(scope: LegScope, engine: Engine, method: string, idempotent: boolean): RetryPolicy {
  const { fed, notes } = scope;
  return {
    budget: fed.retryBudget,
    backoffMs: fed.settings.retry.backoffMs,
    idempotent,
    onDecision: (decision) => {
      notes.push(describeRetry(engine.id, decision));
      if (decision.kind === 'retry') fed.hooks.onRetry?.(engine.id, method);
      else if (decision.why === 'budget') fed.hooks.onRetryBudgetExhausted?.(engine.id, method);
    },
  };
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
    // Its code is kept; a caller's error (§12.2 not retryable) never counted against the engine.
    reason = 'engine-error';
  }
  return { engine: engine.id, code, reason, detail: publicDetail(error), error };
}

/**
 * What goes upstream: `null` fields dropped (§4.6: null = absent, so a stricter engine never
 * sees them), and neither the gateway's vendor `_meta` key nor the client's progress token,
 * deadline, federation path or trace id (each leg sets its own).
 */
export function stripGatewayMeta(params: JsonObject): JsonObject {
  const out: JsonObject = {};
  for (const key in params) {
    const value = params[key];
    if (value !== null && value !== undefined) out[key] = value;
  }
  if (isJsonObject(params._meta)) {
    const {
      progressToken: _token,
      'x-rcpgw': _vendor,
      deadlineMs: _deadline,
      federation: _federation,
      traceId: _trace,
      ...rest
    } = params._meta;
    out._meta = rest;
  }
  return out;
}

/** An engine's log frame of this request, relayed to the client tagged with the engine (§17.1). */
export function relayLog(ctx: CallContext, engineId: string, frame: JsonObject): void {
  const level = frame.level;
  if (level !== 'debug' && level !== 'info' && level !== 'notice' && level !== 'warning' && level !== 'error') return;
  const message = typeof frame.message === 'string' ? frame.message.slice(0, 2_000) : '';
  const data = isJsonObject(frame.data) ? frame.data : undefined;
  ctx.log?.({ level, message, logger: `engine:${engineId}`, ...(data ? { data } : {}) });
}
