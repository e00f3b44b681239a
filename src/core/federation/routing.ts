/**
 * Routing of methods whose results cannot be fused (§7: embed, embed/sparse, embed/multi, rerank,
 * query/transform, feedback, memory/*, graph non-hit ops, x-<vendor>/…) to one engine; writes
 * (index/add, index/delete) are routed by writes.ts. Candidates in order:
 *   1. the engine the client names (`_meta["x-rcpgw"].engine`, else the `x-rcpgw-engine` header),
 *      or the engine an engine-scoped handle names (a gateway `memoryId` or `cursor`);
 *   2. the configured route for the method (`gateway.routes[method]`: an id or ordered list);
 *   3. every engine advertising the gating capability, by descending priority (then id).
 * Only engines that advertise each option the call selects stay candidates (options.ts); none
 * left → -32005 with `error.data.option`. Read methods fail over to the next candidate on a
 * retryable error, an open breaker, a full queue or an engine that is down, within the deadline;
 * writes never do. An embedding is never split across engines, and an embed-family call only
 * fails over to an engine with the same model identity (mixed embedding spaces are wrong,
 * §15.7). The answer names the engine that served it in `_meta.engine`.
 */
import { routeEngineIds } from '../config/schema.js';
import { ErrorCode, RcpError } from '../protocol/errors.js';
import { isJsonObject, type JsonObject } from '../protocol/jsonrpc.js';
import { READ_METHODS, methodGate } from '../protocol/methods.js';
import type { CallContext } from '../service/contract.js';
import { toClientError, type UpstreamError } from '../upstream/errors.js';
import type { Engine } from '../upstream/engine.js';
import { unwrapHandle, wrapHandle } from './affinity.js';
import type { FederationContext } from './context.js';
import { cursorKey, openCursor, requestFingerprint, sealCursor } from './cursor.js';
import { refuseWithoutPagination } from './paged-legs.js';
import { legScope, onPath, relayLog, requireHopBudget, runLeg, stripGatewayMeta } from './leg.js';
import { optionError, optionRequirements, unmetRequirement } from './options.js';
import { progressFrom, withBoundedProgress } from './progress.js';
import { gatewayOptions, TARGET_HEADER, VENDOR_KEY } from './vendor.js';

export { TARGET_HEADER };

/** Methods whose answer lives in one model's vector space (§15.7): never mixed across engines. */
const EMBED_FAMILY: Readonly<Record<string, string>> = { embed: 'embed', 'embed/sparse': 'sparseEmbed', 'embed/multi': 'multiVector' };
/** Methods whose `memoryId` is engine-scoped (§7.17). */
const MEMORY_METHODS = new Set(['memory/build', 'memory/recall']);

/** Where a routed call goes: ordered candidates, plus the params to send (handles unwrapped). */
export interface Route {
  candidates: Engine[];
  params: JsonObject;
  /** Why the first candidate was chosen (for `_meta.routedBy`). */
  by: 'explicit' | 'handle' | 'cursor' | 'route' | 'priority';
}

function capabilityOf(method: string): string | null {
  const gate = methodGate(method);
  return gate.defined ? gate.capability : null;
}

/** The engine a client or a handle pinned, checked against the call's capability and options. */
function pinned(method: string, params: JsonObject, id: string, field: string, fed: FederationContext): Engine {
  const engine = fed.engines.find((e) => e.id === id);
  if (!engine) throw RcpError.invalidParams(field, `unknown engine "${id}"`);
  const capability = capabilityOf(method);
  if (engine.capabilities !== undefined) {
    if (capability !== null && !engine.has(capability)) {
      throw RcpError.optionUnsupported(field, `engine ${engine.id} does not advertise ${capability}`);
    }
    const unmet = unmetRequirement(engine.capabilities, optionRequirements(method, params));
    if (unmet) throw optionError(method, unmet, `engine ${engine.id}`);
  }
  return engine;
}

/** Ordered candidate engines for `method`; throws -32602 / -32005 / -32010 when there are none. */
export function routeCandidates(method: string, params: JsonObject, ctx: CallContext, fed: FederationContext): Route {
  const options = gatewayOptions(params, fed.settings, { method, headers: ctx.headers });
  let outbound = params;

  // Pagination off, any cursor (even "" or a non-string) is -32602, never forwarded to an engine.
  if (params.cursor !== undefined && params.cursor !== null) refuseWithoutPagination(fed);
  // A gateway cursor of a routed result names the engine whose own cursor it wraps (§10).
  if (typeof params.cursor === 'string' && params.cursor.length > 0) {
    const payload = openCursor(params.cursor, cursorKey(fed.settings.cursorSecret), {
      method,
      fingerprint: requestFingerprint(params, VENDOR_KEY),
    });
    if (payload.position.kind !== 'routed') throw RcpError.invalidParams('cursor', 'not a cursor for this method');
    outbound = { ...params, cursor: payload.position.cursor };
    return { candidates: [pinned(method, outbound, payload.position.engine, 'cursor', fed)], params: outbound, by: 'cursor' };
  }
  // An engine-scoped memoryId goes back to the engine that minted it (§7.17).
  if (MEMORY_METHODS.has(method) && typeof params.memoryId === 'string') {
    const handle = unwrapHandle(params.memoryId);
    if (handle) {
      outbound = { ...params, memoryId: handle.handle };
      const engine = fed.engines.find((e) => e.id === handle.engine);
      if (!engine)
        throw new RcpError(ErrorCode.NotFound, `memoryId names engine "${handle.engine}", which this gateway no longer federates`, {
          field: 'memoryId',
        });
      if (options.engine !== undefined && options.engine !== engine.id) {
        throw RcpError.invalidParams('memoryId', `belongs to engine ${engine.id}, not the requested ${options.engine}`);
      }
      return { candidates: [pinned(method, outbound, engine.id, 'memoryId', fed)], params: outbound, by: 'handle' };
    }
  }
  if (options.engine !== undefined) {
    const field = isVendorEngine(params) ? `_meta.${VENDOR_KEY}.engine` : TARGET_HEADER;
    return { candidates: [pinned(method, params, options.engine, field, fed)], params, by: 'explicit' };
  }

  const capability = capabilityOf(method);
  const capable = (engine: Engine): boolean => capability === null || engine.has(capability);
  const configured = routeEngineIds(fed.settings.routes[method]);
  let ordered: Engine[];
  if (configured !== undefined) {
    // A configured route is authoritative; an engine that never came up stays (it fails -32010).
    ordered = configured
      .map((id) => fed.engines.find((engine) => engine.id === id))
      .filter((engine): engine is Engine => engine !== undefined && (engine.capabilities === undefined || capable(engine)));
  } else {
    ordered = fed.engines
      .filter((engine) => engine.capabilities !== undefined && capable(engine))
      .sort((a, b) => b.priority - a.priority || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  }
  if (ordered.length === 0) {
    throw new RcpError(ErrorCode.BackendUnavailable, `no engine is available for ${method}`, { retryable: true });
  }
  const requirements = optionRequirements(method, params);
  if (requirements.length > 0) {
    const supporting = ordered.filter(
      (engine) => engine.capabilities === undefined || !unmetRequirement(engine.capabilities, requirements),
    );
    if (supporting.length === 0) {
      const unmet = requirements.find((r) => ordered.every((e) => !r.supportedBy(e.capabilities ?? {}))) ?? requirements[0]!;
      throw optionError(method, unmet, 'any engine');
    }
    ordered = supporting;
  }
  const family = EMBED_FAMILY[method];
  if (family !== undefined) ordered = sameModel(ordered, family);
  return { candidates: ordered, params, by: configured !== undefined ? 'route' : 'priority' };
}

function isVendorEngine(params: JsonObject): boolean {
  const meta = isJsonObject(params._meta) ? params._meta : undefined;
  const vendor = meta?.[VENDOR_KEY];
  return isJsonObject(vendor) && typeof vendor.engine === 'string';
}

/** Keep the first candidate and only those with the same model identity and dimension. */
function sameModel(engines: readonly Engine[], capability: string): Engine[] {
  const first = engines[0];
  if (!first) return [];
  const model = first.capabilities?.[capability];
  if (model === undefined) return [first];
  return engines.filter((engine) => {
    const other = engine.capabilities?.[capability];
    return (
      engine === first ||
      (other !== undefined && other.identity !== undefined && other.identity === model.identity && other.dimension === model.dimension)
    );
  });
}

/** Call the first healthy candidate; fail over (reads only) on retryable errors within the deadline. */
export async function routeToOne(method: string, params: JsonObject, callerCtx: CallContext, fed: FederationContext): Promise<JsonObject> {
  // One engine's progress, relayed monotone and rate-bounded like a fan-out's (§9).
  const ctx = withBoundedProgress(callerCtx, fed.settings.progressFramesPerSecond);
  requireHopBudget(ctx, fed); // §16.2: a routed call is forwarded too
  const route = routeCandidates(method, params, ctx, fed);
  const isRead = READ_METHODS.has(method);
  const path = ctx.meta.federation?.path ?? [];
  const tried: Array<{ engine: string; code: number; reason: string }> = [];
  let lastError: { error: UpstreamError; engine: Engine } | undefined;
  const outbound = stripGatewayMeta(route.params);
  const scope = legScope(ctx, fed);

  for (const engine of route.candidates) {
    if (onPath(engine, path)) {
      tried.push({ engine: engine.id, code: ErrorCode.BackendUnavailable, reason: 'cycle' });
      continue;
    }
    if (ctx.deadlineAt - performance.now() - fed.settings.deadlineReserveMs <= 0) break;
    const leg = await runLeg(scope, engine, method, outbound, {
      onProgress: ctx.progress ? (frame) => ctx.progress?.(progressFrom(engine.id, frame)) : undefined,
      onLog: ctx.log ? (frame) => relayLog(ctx, engine.id, frame) : undefined,
    });
    if (leg.ok)
      return finishRouted(method, params, leg.result, { engine, route, tried, notes: scope.notes, traceId: scope.trace.traceId }, fed);
    const { error, failure } = leg;
    tried.push({ engine: engine.id, code: failure.code, reason: failure.reason });
    lastError = { error, engine };
    // Fail over only for reads, only when another engine might succeed.
    const failOver = isRead && (error.retryable || error.reason === 'circuit-open' || error.reason === 'queue-full');
    if (!failOver || ctx.signal.aborted) break;
  }
  if (lastError) {
    const clientError = toClientError(lastError.error, lastError.engine.id);
    if (tried.length > 1 && clientError.data) clientError.data.tried = tried;
    throw clientError;
  }
  throw new RcpError(ErrorCode.BackendUnavailable, `no engine could serve ${method}`, { tried, retryable: true });
}

/** The client's answer: engine-scoped handles wrapped, the serving engine named in `_meta`. */
interface Served {
  engine: Engine;
  route: Route;
  tried: readonly object[];
  notes: readonly string[];
  traceId: string;
}

function finishRouted(method: string, params: JsonObject, result: JsonObject, served: Served, fed: FederationContext): JsonObject {
  const { engine, route, tried, notes } = served;
  const out: JsonObject = { ...result };
  if (MEMORY_METHODS.has(method) && typeof out.memoryId === 'string') out.memoryId = wrapHandle(engine.id, out.memoryId);
  if (typeof out.nextCursor === 'string' && out.nextCursor.length > 0 && fed.settings.pagination) {
    // The engine's cursor only means something to that engine: wrap it so the next page comes back here.
    out.nextCursor = sealCursor(
      {
        method,
        fingerprint: requestFingerprint(params, VENDOR_KEY),
        expiresAt: Date.now() + fed.settings.cursorTtlMs,
        position: { kind: 'routed', engine: engine.id, cursor: out.nextCursor },
      },
      cursorKey(fed.settings.cursorSecret),
    );
  } else {
    delete out.nextCursor;
  }
  const meta = isJsonObject(result._meta) ? result._meta : {};
  out._meta = {
    ...meta,
    engine: engine.id,
    routedBy: route.by,
    traceId: served.traceId,
    ...(tried.length > 0 ? { failedOver: tried } : {}),
    // Retry decisions (a routed result has no `usage` in general, so they travel in `_meta`).
    ...(notes.length > 0 ? { notes: [...notes] } : {}),
  };
  return out;
}
