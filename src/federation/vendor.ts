/**
 * The gateway's vendor `_meta` key (§4.4, §6.2): `_meta["x-rcpgw"]` on a request may pick the
 * fusion strategy, dedup policy, rrfK, the engines to use, or the one engine to route to.
 *   { "x-rcpgw": { "fusion": "rrf"|"weighted"|"convex", "dedup": "id"|"citation.uri"|"content-hash",
 *                  "rrfK": 60, "engines": ["a","b"], "engine": "a" } }
 */
import { z } from 'zod';
import type { GatewaySettings } from '../config/schema.js';
import { RcpError } from '../protocol/errors.js';
import { isJsonObject, type JsonObject } from '../protocol/jsonrpc.js';
import type { DedupPolicy, FusionMethod } from './fusion/types.js';

export const VENDOR_KEY = 'x-rcpgw';

const VendorSchema = z.looseObject({
  fusion: z.enum(['rrf', 'weighted', 'convex']).optional(),
  dedup: z.enum(['id', 'citation.uri', 'content-hash']).optional(),
  rrfK: z.number().finite().min(0).optional(),
  engines: z.array(z.string()).min(1).optional(),
  engine: z.string().optional(),
});

export interface GatewayOptions {
  fusion: FusionMethod;
  dedup: DedupPolicy;
  rrfK: number;
  engines: string[] | undefined;
  engine: string | undefined;
}

export function gatewayOptions(params: JsonObject, settings: GatewaySettings, headerEngine?: string): GatewayOptions {
  const meta = isJsonObject(params._meta) ? params._meta : undefined;
  const raw = meta?.[VENDOR_KEY];
  let vendor: z.infer<typeof VendorSchema> = {};
  if (raw !== undefined && raw !== null) {
    const parsed = VendorSchema.safeParse(raw);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      throw RcpError.invalidParams(`_meta.${VENDOR_KEY}.${issue.path.map(String).join('.')}`, issue.message);
    }
    vendor = parsed.data;
  }
  return {
    fusion: vendor.fusion ?? settings.fusion,
    dedup: vendor.dedup ?? settings.dedup,
    rrfK: vendor.rrfK ?? settings.rrfK,
    engines: vendor.engines,
    engine: vendor.engine ?? headerEngine,
  };
}
