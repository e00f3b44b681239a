/**
 * Routing of methods whose results cannot be fused (§7: embed, rerank, query/transform, index/*,
 * feedback, memory/*, graph non-hit ops, x-<vendor>/…) to one engine. Candidates in order:
 * the engine the client names (`_meta["x-rcpgw"].engine` or the `x-rcpgw-engine` header), the
 * configured route for the method, then live engines advertising the gating capability by
 * descending priority. Read methods fail over to the next candidate on a retryable error or an
 * open breaker, within the deadline; writes never do.
 */
import { ErrorCode, RcpError } from '../protocol/errors.js';
import { isJsonObject, type JsonObject } from '../protocol/jsonrpc.js';
import { READ_METHODS, methodGate } from '../protocol/methods.js';
import { stringArray } from '../protocol/capabilities.js';
import type { CallContext } from '../server/service.js';
import { toClientError, UpstreamError } from '../upstream/errors.js';
import type { Engine } from '../upstream/engine.js';
import type { FederationContext } from './context.js';
import { failureOf, federationForward, onPath } from './fanout.js';
import { relayLog, stripGatewayMeta } from './retrieve.js';
import { traceContext } from './trace.js';
import { gatewayOptions } from './vendor.js';

export const TARGET_HEADER = 'x-rcpgw-engine';

/** The option a method's params select, checked against the capability's advertised list (-32005). */
function requiredOption(method: string, params: JsonObject): { key: string; listKey: string; value: string } | undefined {
  if (method === 'rerank' && typeof params.method === 'string') return { key: 'method', listKey: 'methods', value: params.method };
  if (method === 'query/transform' && typeof params.method === 'string') return { key: 'method', listKey: 'methods', value: params.method };
  if (method === 'graph' && typeof params.op === 'string') return { key: 'op', listKey: 'ops', value: params.op };
  if (method === 'memory/build' && typeof params.scope === 'string') return { key: 'scope', listKey: 'scopes', value: params.scope };
  return undefined;
}

function supportsOption(engine: Engine, capability: string, option: { listKey: string; value: string }): boolean {
  const cap = engine.capabilities?.[capability];
  return cap !== undefined && stringArray(cap[option.listKey]).includes(option.value);
}

/** Ordered candidate engines for `method`; throws -32005 when no candidate supports the option. */
export function routeCandidates(method: string, params: JsonObject, ctx: CallContext, fed: FederationContext): Engine[] {
  const gate = methodGate(method);
  const capability = gate.defined ? gate.capability : null;
  const options = gatewayOptions(params, fed.settings, ctx.headers[TARGET_HEADER]);
  const byId = new Map(fed.engines.map((engine) => [engine.id, engine]));
  const capable = (engine: Engine): boolean => capability === null || engine.has(capability);

  if (options.engine !== undefined) {
    const target = byId.get(options.engine);
    if (!target) throw RcpError.invalidParams(`_meta.x-rcpgw.engine`, `unknown engine "${options.engine}"`);
    if (target.capabilities !== undefined && !capable(target)) {
      throw new RcpError(ErrorCode.CapabilityMissing, `engine ${target.id} does not advertise ${capability}`, { option: capability ?? method });
    }
    return [target];
  }

  const ordered: Engine[] = [];
  const configured = fed.settings.routes[method];
  if (configured !== undefined) {
    for (const id of Array.isArray(configured) ? configured : [configured]) {
      const engine = byId.get(id);
      if (engine) ordered.push(engine);
    }
  } else {
    const eligible = fed.engines.filter(capable).filter((engine) => engine.capabilities !== undefined);
    // Writes go to configured writers first when any are marked.
    const writers = eligible.filter((engine) => engine.config.writer === true);
    const pool = (method === 'index/add' || method === 'index/delete') && writers.length > 0 ? writers : eligible;
    ordered.push(...[...pool].sort((a, b) => b.priority - a.priority || (a.id < b.id ? -1 : 1)));
  }
  if (ordered.length === 0) {
    throw new RcpError(ErrorCode.BackendUnavailable, `no engine is available for ${method}`, { retryable: true });
  }
  const option = requiredOption(method, params);
  if (option && capability) {
    const supporting = ordered.filter((engine) => engine.capabilities === undefined || supportsOption(engine, capability, option));
    if (supporting.length === 0) {
      throw RcpError.optionUnsupported(`${option.key}`, `${method} ${option.key} "${option.value}" is not advertised by any engine`);
    }
    return supporting;
  }
  return ordered;
}

/** Call the first healthy candidate; fail over (reads only) on retryable errors within the deadline. */
export async function routeToOne(method: string, params: JsonObject, ctx: CallContext, fed: FederationContext): Promise<JsonObject> {
  const candidates = routeCandidates(method, params, ctx, fed);
  const isRead = READ_METHODS.has(method);
  const trace = traceContext(ctx.headers, ctx.meta.traceId);
  const forward = federationForward(ctx, fed);
  const path = ctx.meta.federation?.path ?? [];
  const tried: Array<{ engine: string; code: number; reason: string }> = [];
  let lastError: { error: UpstreamError; engine: Engine } | undefined;
  const outbound = stripGatewayMeta(params);
  const callerMeta = isJsonObject(outbound._meta) ? outbound._meta : {};

  for (const engine of candidates) {
    if (onPath(engine, path)) {
      tried.push({ engine: engine.id, code: ErrorCode.BackendUnavailable, reason: 'cycle' });
      continue;
    }
    const remaining = ctx.deadlineAt - performance.now() - fed.settings.deadlineReserveMs;
    if (remaining <= 0) break;
    const started = performance.now();
    try {
      const result = await engine.call(method, {
        ...outbound,
        _meta: { ...callerMeta, deadlineMs: Math.max(1, Math.floor(remaining) - 1), federation: forward, traceId: trace.traceId },
      }, {
        signal: ctx.signal,
        timeoutMs: Math.floor(remaining),
        headers: { traceparent: trace.traceparent },
        onProgress: ctx.progress ? (frame) => ctx.progress?.(progressFrom(engine.id, frame)) : undefined,
        onLog: ctx.log ? (frame) => relayLog(ctx, engine.id, frame) : undefined,
      });
      fed.hooks.onLeg?.(engine.id, method, 0, performance.now() - started);
      const meta = isJsonObject(result._meta) ? result._meta : {};
      return {
        ...result,
        _meta: { ...meta, engine: engine.id, traceId: trace.traceId, ...(tried.length > 0 ? { failedOver: tried } : {}) },
      };
    } catch (err) {
      const error = err instanceof UpstreamError ? err : new UpstreamError('malformed', (err as Error).message);
      const failure = failureOf(engine, error, ctx);
      fed.hooks.onLeg?.(engine.id, method, failure.code, performance.now() - started);
      tried.push({ engine: engine.id, code: failure.code, reason: failure.reason });
      lastError = { error, engine };
      // Fail over only for reads, only when another engine might succeed.
      const failOver = isRead && (error.retryable || error.reason === 'circuit-open' || error.reason === 'queue-full');
      if (!failOver || ctx.signal.aborted) break;
    }
  }
  if (lastError) {
    const clientError = toClientError(lastError.error, lastError.engine.id);
    if (tried.length > 1 && clientError.data) clientError.data.tried = tried;
    throw clientError;
  }
  throw new RcpError(ErrorCode.BackendUnavailable, `no engine could serve ${method}`, { tried, retryable: true });
}

function progressFrom(engineId: string, frame: JsonObject): { progress?: number; stage?: string; message?: string } {
  const progress = typeof frame.progress === 'number' && Number.isFinite(frame.progress) ? Math.min(1, Math.max(0, frame.progress)) : undefined;
  const stage = typeof frame.stage === 'string' ? frame.stage : undefined;
  const message = `${stage ?? 'working'} from engine ${engineId}${typeof frame.message === 'string' ? `: ${frame.message.slice(0, 200)}` : ''}`;
  return { ...(progress !== undefined ? { progress } : {}), ...(stage ? { stage } : {}), message };
}
