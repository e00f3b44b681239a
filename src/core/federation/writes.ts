/**
 * Writes (§7.10 `index/add`, §7.11 `index/delete`). The engines a write goes to:
 *   1. the engine the client names (`_meta["x-rcpgw"].engine` / `x-rcpgw-engine` header);
 *   2. with `gateway.broadcastWrites`, every engine advertising `index.writable: true`;
 *   3. else the engines `gateway.routes[method]` lists (each of them is written: a write route
 *      names writers, not fallbacks);
 *   4. else every engine marked `writer: true` in config;
 *   5. else the highest-priority engine advertising `index.writable: true`.
 * A write never fails over to another engine, and it is sent to each target concurrently. Every
 * target's outcome is reported in `_meta.writes: [{engine, ok, code?, message?}]`. The result is
 * the first successful target's (in the order above); if any target failed it also carries
 * `_meta.partial: true` (a partial failure is never hidden); if every target failed, the call
 * fails with the first target's error, `error.data.writes` listing every outcome.
 * Retries (on the same engine, never another): only when the write is idempotent — every
 * document carries an `id` (§7.10), or it is a delete (§7.11) — through the retry layer.
 */
import { routeEngineIds } from '../config/schema.js';
import { ErrorCode, RcpError } from '../protocol/errors.js';
import { isJsonObject, type JsonObject } from '../protocol/jsonrpc.js';
import type { CallContext } from '../service/contract.js';
import { publicDetail, toClientError, UpstreamError } from '../upstream/errors.js';
import type { Engine } from '../upstream/engine.js';
import type { FederationContext } from './context.js';
import { failureOf, legScope, onPath, relayLog, requireHopBudget, runLeg, stripGatewayMeta } from './leg.js';
import { optionError, optionRequirements, unmetRequirement } from './options.js';
import { progressFrom } from './progress.js';
import { gatewayOptions, TARGET_HEADER, VENDOR_KEY } from './vendor.js';

export const INDEX_WRITES = new Set(['index/add', 'index/delete']);

/** §7.10/§7.11: a write that may be repeated without changing its effect. */
export function retrySafeWrite(method: string, params: JsonObject): boolean {
  if (method === 'index/delete') return true;
  if (method !== 'index/add' || !Array.isArray(params.documents) || params.documents.length === 0) return false;
  return params.documents.every(
    (doc) => isJsonObject(doc) && (typeof doc.id === 'string' ? doc.id.length > 0 : typeof doc.id === 'number'),
  );
}

function writable(engine: Engine): boolean {
  return engine.capabilities?.index?.writable === true;
}

function byPriority(a: Engine, b: Engine): number {
  return b.priority - a.priority || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}

/** The engines a write goes to, in reporting order (see the module comment). */
export function writeTargets(
  method: string,
  params: JsonObject,
  ctx: CallContext,
  fed: FederationContext,
): { targets: Engine[]; by: string } {
  const options = gatewayOptions(params, fed.settings, { method, headers: ctx.headers });
  if (options.engine !== undefined) {
    const engine = fed.engines.find((e) => e.id === options.engine);
    const meta = isJsonObject(params._meta) ? params._meta : {};
    const field = isJsonObject(meta[VENDOR_KEY]) ? `_meta.${VENDOR_KEY}.engine` : TARGET_HEADER;
    if (!engine) throw RcpError.invalidParams(field, `unknown engine "${options.engine}"`);
    if (engine.capabilities !== undefined && !writable(engine)) {
      throw RcpError.optionUnsupported(field, `engine ${engine.id} does not advertise index.writable`);
    }
    return { targets: [engine], by: 'explicit' };
  }
  if (fed.settings.broadcastWrites) {
    return { targets: fed.engines.filter(writable).sort(byPriority), by: 'broadcast' };
  }
  const routed = routeEngineIds(fed.settings.routes[method]);
  if (routed !== undefined) {
    const targets = routed
      .map((id) => fed.engines.find((e) => e.id === id))
      .filter((e): e is Engine => e !== undefined && (e.capabilities === undefined || writable(e)));
    return { targets, by: 'route' };
  }
  const marked = fed.engines.filter((e) => e.config.writer === true && (e.capabilities === undefined || writable(e))).sort(byPriority);
  if (marked.length > 0) return { targets: marked, by: 'writer' };
  const first = fed.engines.filter(writable).sort(byPriority)[0];
  return { targets: first ? [first] : [], by: 'priority' };
}

interface WriteOutcome {
  engine: string;
  ok: boolean;
  code?: number;
  message?: string;
}

export async function federatedWrite(method: string, params: JsonObject, ctx: CallContext, fed: FederationContext): Promise<JsonObject> {
  requireHopBudget(ctx, fed); // §16.2: a write is forwarded too
  const { targets, by } = writeTargets(method, params, ctx, fed);
  if (targets.length === 0) {
    throw new RcpError(ErrorCode.BackendUnavailable, `no writable engine is available for ${method}`, { retryable: false });
  }
  // Every target must honour the options (chunk, contextual) before anything is written anywhere.
  const requirements = optionRequirements(method, params);
  for (const engine of targets) {
    const unmet = engine.capabilities ? unmetRequirement(engine.capabilities, requirements) : undefined;
    if (unmet) throw optionError(method, unmet, `engine ${engine.id}`);
  }
  const path = ctx.meta.federation?.path ?? [];
  const outbound = stripGatewayMeta(params);
  const scope = legScope(ctx, fed);
  // §7.10: only a write whose every document carries an id may be repeated (the retry layer).
  const idempotent = retrySafeWrite(method, params);

  const settled = await Promise.all(
    targets.map(async (engine): Promise<{ engine: Engine; result?: JsonObject; error?: UpstreamError }> => {
      if (onPath(engine, path)) {
        return { engine, error: new UpstreamError('not-ready', 'engine is on the federation path (cycle, §16.2)') };
      }
      const leg = await runLeg(scope, engine, method, outbound, {
        idempotent,
        // One writer's progress is relayed as is; several broadcast writers' would interleave.
        onProgress: ctx.progress && targets.length === 1 ? (frame) => ctx.progress?.(progressFrom(engine.id, frame)) : undefined,
        onLog: ctx.log ? (frame) => relayLog(ctx, engine.id, frame) : undefined,
      });
      return leg.ok ? { engine, result: leg.result } : { engine, error: leg.error };
    }),
  );

  const writes: WriteOutcome[] = settled.map((s) =>
    s.error === undefined
      ? { engine: s.engine.id, ok: true }
      : { engine: s.engine.id, ok: false, code: failureOf(s.engine, s.error, ctx).code, message: publicDetail(s.error) },
  );
  const success = settled.find((s) => s.result !== undefined);
  if (!success || !success.result) {
    const first = settled[0]!;
    const error = toClientError(first.error, first.engine.id);
    throw new RcpError(error.code, error.message, {
      ...error.data,
      writes: writes.map(({ engine, ok, code }) => ({ engine, ok, ...(code !== undefined ? { code } : {}) })),
    });
  }
  const partial = writes.some((w) => !w.ok);
  const meta = isJsonObject(success.result._meta) ? success.result._meta : {};
  // A write is no list result (§10): an engine's cursor here means nothing to the client.
  const { nextCursor: _engineCursor, ...result } = success.result;
  return {
    ...result,
    _meta: {
      ...meta,
      engine: success.engine.id,
      routedBy: by,
      traceId: scope.trace.traceId,
      writes,
      ...(partial ? { partial: true } : {}),
      ...(scope.notes.length > 0 ? { notes: scope.notes } : {}),
    },
  };
}
