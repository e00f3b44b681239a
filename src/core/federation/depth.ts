/**
 * How many hits each engine of a fused method is asked for (§16.2: "at least k … or a small
 * multiple to give fusion headroom"). Up to `gateway.fusionDepth` the answer does not depend on
 * the request's `k`: every engine is asked for the same depth, so the fused order is one list and
 * a request for k₁ < k₂ ≤ fusionDepth gets a prefix of the k₂ answer, and pages of any size cut
 * the same list (paging.ts). Past it (k > fusionDepth) each engine is asked for k × fusionHeadroom.
 * Cost: engines × fusionDepth upstream hits per request.
 */
import type { GatewaySettings } from '../config/schema.js';

export function fusionLegDepth(k: number, settings: Pick<GatewaySettings, 'fusionDepth' | 'fusionHeadroom'>): number {
  return k <= settings.fusionDepth ? settings.fusionDepth : Math.ceil(k * settings.fusionHeadroom);
}
