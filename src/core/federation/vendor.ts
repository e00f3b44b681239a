/**
 * The gateway's vendor `_meta` key (§4.4, §6.2): `_meta["x-rcpgw"]` on a request may pick the
 * fusion strategy, dedup policy, rrfK, per-engine weights, the engines to use, or the one engine
 * to route to.
 *   { "x-rcpgw": { "fusion": "rrf"|"weighted"|"convex", "dedup": "id"|"citation.uri"|"content-hash",
 *                  "rrfK": 60, "weights": {"a": 2}, "engines": ["a","b"], "engine": "a" } }
 * A debugging aid used by the operator console: `"lineage": true` on a fused `retrieve` adds
 * `_meta["x-rcpgw"].lineage` to the answer (each engine's own list and each hit's contributions
 * to its fused score); answers without it are unchanged.
 * Precedence, per field: the request's `_meta["x-rcpgw"]`, then the method's route in config
 * (`gateway.routes[method]` object form), then the gateway defaults. The target engine can also
 * be named by the `x-rcpgw-engine` HTTP header (the `_meta` key wins when both are present).
 */
import { z } from 'zod';
import { fusionWeight } from '../config/primitives.js';
import { routeEngineIds, type GatewaySettings } from '../config/schema.js';
import { RcpError } from '../protocol/errors.js';
import { isJsonObject, type JsonObject } from '../protocol/jsonrpc.js';
import type { DedupPolicy, FusionMethod } from './fusion/types.js';

export const VENDOR_KEY = 'x-rcpgw';
/** HTTP header naming the engine to route to (same meaning as `_meta["x-rcpgw"].engine`). */
export const TARGET_HEADER = 'x-rcpgw-engine';

const VendorSchema = z.looseObject({
  fusion: z.enum(['rrf', 'weighted', 'convex']).optional(),
  dedup: z.enum(['id', 'citation.uri', 'content-hash']).optional(),
  rrfK: z.number().finite().min(0).optional(),
  weights: z.record(z.string(), fusionWeight).optional(),
  engines: z.array(z.string()).min(1).optional(),
  engine: z.string().min(1).optional(),
  lineage: z.boolean().optional(),
});

export interface GatewayOptions {
  fusion: FusionMethod;
  dedup: DedupPolicy;
  rrfK: number;
  /** Per-engine weight overrides (engine id → weight); absent engines keep their configured weight. */
  weights: Readonly<Record<string, number>>;
  /** Restrict a fan-out to these engines (request `_meta` only). */
  engines: string[] | undefined;
  /** Route to exactly this engine (request `_meta`, else the header). */
  engine: string | undefined;
  /** Explain the fusion in the answer (`_meta["x-rcpgw"].lineage`, fusion/lineage.ts). */
  lineage?: boolean;
}

export interface OptionsContext {
  /** The method being served, for its route's fusion options. */
  method?: string;
  /** Lower-cased inbound headers (the `x-rcpgw-engine` header names a target). */
  headers?: Readonly<Record<string, string>>;
}

export function gatewayOptions(params: JsonObject, settings: GatewaySettings, context: OptionsContext = {}): GatewayOptions {
  const meta = isJsonObject(params._meta) ? params._meta : undefined;
  const raw = meta?.[VENDOR_KEY];
  let vendor: z.infer<typeof VendorSchema> = {};
  if (raw !== undefined && raw !== null) {
    const parsed = VendorSchema.safeParse(raw);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      const where = issue.path.map(String).join('.');
      throw RcpError.invalidParams(`_meta.${VENDOR_KEY}${where ? `.${where}` : ''}`, issue.message);
    }
    vendor = parsed.data;
  }
  const route = context.method !== undefined ? settings.routes[context.method] : undefined;
  const routeOptions = route !== undefined && typeof route === 'object' && !Array.isArray(route) ? route : {};
  const header = context.headers?.[TARGET_HEADER]?.trim();
  return {
    fusion: vendor.fusion ?? routeOptions.fusion ?? settings.fusion,
    dedup: vendor.dedup ?? routeOptions.dedup ?? settings.dedup,
    rrfK: vendor.rrfK ?? routeOptions.rrfK ?? settings.rrfK,
    weights: vendor.weights ?? {},
    engines: vendor.engines,
    engine: vendor.engine ?? (header ? header : undefined),
    ...(vendor.lineage === true ? { lineage: true } : {}),
  };
}

/**
 * The fan-out set a request and its route allow (undefined = every engine). Engine ids the
 * request names must exist (-32602).
 */
export function allowedEngines(
  options: GatewayOptions,
  settings: GatewaySettings,
  method: string,
  known: readonly { id: string }[],
): Set<string> | undefined {
  if (options.engine === undefined && options.engines === undefined) {
    const routed = routeEngineIds(settings.routes[method]);
    return routed !== undefined ? new Set(routed) : undefined; // the common path: no per-request set to build
  }
  const ids = new Set(known.map((engine) => engine.id));
  if (options.engine !== undefined) {
    if (!ids.has(options.engine)) throw RcpError.invalidParams(`_meta.${VENDOR_KEY}.engine`, `unknown engine "${options.engine}"`);
    return new Set([options.engine]);
  }
  const named = options.engines ?? [];
  const unknown = named.find((id) => !ids.has(id));
  if (unknown !== undefined) throw RcpError.invalidParams(`_meta.${VENDOR_KEY}.engines`, `unknown engine "${unknown}"`);
  return new Set(named);
}
