/**
 * What a paged fan-out asks of each engine (§10): the position a request's gateway `cursor`
 * names (verified, or refused when pagination is off), each leg's window depth and first-call
 * `k`, and the params of one call. pages.ts reads and deepens the legs; retrieve and graph plan
 * them with these.
 */
import { shallowCopy } from '../protocol/copy.js';
import { RcpError } from '../protocol/errors.js';
import type { JsonObject } from '../protocol/jsonrpc.js';
import type { Engine } from '../upstream/engine.js';
import type { FederationContext } from './context.js';
import { canonicalRequest, cursorKey, legacyRequestFingerprint, openCursor, type FusedPosition } from './cursor.js';
import { isFusedCursor, openFusedCursor } from './fused-cursor.js';
import { segmentDepth } from './paging.js';
import { VENDOR_KEY } from './vendor.js';

export interface Resume extends FusedPosition {
  /** The canonical request the cursor is bound to (cursor.ts `canonicalRequest`): the next page's cursor is too. */
  request: string;
}

/** The position a request's `cursor` names, or undefined on a first page. Throws -32602 / -32015. */
export function resumeFrom(method: string, params: JsonObject, fed: FederationContext): Resume | undefined {
  const token = params.cursor;
  if (token !== undefined && token !== null) refuseWithoutPagination(fed); // even "": off, any cursor is -32602
  if (typeof token !== 'string' || token.length === 0) return undefined;
  const request = canonicalRequest(params, VENDOR_KEY);
  const key = cursorKey(fed.settings.cursorSecret);
  // Compact cursors are what fused pages are issued with; version 1 ones, from before it, still open.
  if (isFusedCursor(token)) return { ...openFusedCursor(token, key, { method, request }).position, request };
  const payload = openCursor(token, key, { method, fingerprint: legacyRequestFingerprint(params, VENDOR_KEY) });
  if (payload.position.kind !== 'fused') throw RcpError.invalidParams('cursor', 'not a cursor for a fused result');
  return { ...payload.position, request };
}

/**
 * A cursor names the engines that formed its first page. One this request cannot reach — another
 * engine selection (`_meta["x-rcpgw"]` or the `x-rcpgw-engine` header), an engine no longer
 * configured, or one outside the caller's scope — can never serve its next page: -32602 on
 * `cursor` (repeat the first request exactly), not the retryable -32010 of an engine that is down.
 */
export function requireReachableEngines(
  resume: Resume | undefined,
  engines: readonly { id: string }[],
  allowed: ReadonlySet<string> | undefined,
): void {
  if (resume === undefined) return;
  const configured = new Set(engines.map((engine) => engine.id));
  if (resume.engines.every((id) => configured.has(id) && (allowed === undefined || allowed.has(id)))) return;
  throw RcpError.invalidParams(
    'cursor',
    "the cursor belongs to a result set of engines this request does not reach (another engine selection, scope or configuration): repeat the first page's request exactly, or restart pagination",
  );
}

/** §10: a `cursor` is only meaningful where `pagination` is advertised; off, it is -32602. */
export function refuseWithoutPagination(fed: FederationContext): void {
  if (!fed.settings.pagination) {
    throw RcpError.invalidParams('cursor', 'this gateway does not offer pagination (gateway.pagination is off)');
  }
}

/** One engine's leg of a paged fan-out. */
export interface PagedLeg {
  engine: Engine;
  /** What the first call asks this engine for. */
  k: number;
  /** Window depth W_e: this engine's share of one segment. */
  base: number;
  /** Largest `k` one call to this engine may ask (its maxK, rerank.topN). */
  cap: number;
  /** Params this engine is asked without (a `retrieve` mode it lacks, with `strict: false`). */
  omit?: readonly string[];
}

/** Base depth and first-call `k` of a leg: the cursor's depth when resuming, else `firstK`. */
export function pagedLeg(
  resume: Resume | undefined,
  engineId: string,
  firstK: number,
  cap: number,
  maxDepth: number,
): { k: number; base: number; cap: number } {
  const base = resume?.depth[engineId] ?? firstK;
  return { base, cap, k: Math.max(1, Math.min(segmentDepth(base, resume?.segment ?? 0), cap, maxDepth)) };
}

/**
 * Params for one call of a paged leg: what goes upstream (leg.ts `stripGatewayMeta`) with this
 * call's `k`, less what the leg omits, and the engine's own cursor when continuing from it (the
 * engines' cursors live inside the gateway's own, so the client's is never forwarded).
 */
export function legParams(outbound: JsonObject, leg: PagedLeg, k: number, cursor?: string): JsonObject {
  const out = shallowCopy(outbound); // then extended: protocol/copy.ts
  out.k = k;
  if (leg.omit) for (const key of leg.omit) delete out[key];
  if (cursor !== undefined) out.cursor = cursor;
  else delete out.cursor;
  return out;
}
