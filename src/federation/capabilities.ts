/**
 * What the gateway advertises (§6, §16.4): derived from its engines, true for what it will do.
 * `retrieve` with the gateway's maxK and the union of engine modes; `catalog {engines}`;
 * `streaming`; and every routable capability (union) with metadata only where it holds for the
 * single engine routing resolves to.
 */
import type { Capabilities } from '../protocol/capabilities.js';
import { stringArray } from '../protocol/capabilities.js';
import type { JsonObject } from '../protocol/jsonrpc.js';
import type { Engine } from '../upstream/engine.js';
import type { GatewaySettings } from '../config/schema.js';

/** Capabilities routed to a single engine (not fused). */
export const ROUTED_CAPABILITIES = ['embed', 'sparseEmbed', 'multiVector', 'rerank', 'transform', 'index', 'feedback', 'memory'] as const;

export function deriveCapabilities(engines: readonly Engine[], settings: GatewaySettings): Capabilities {
  const known = engines.filter((engine) => engine.capabilities !== undefined);
  const caps: Capabilities = {};

  const retrievers = known.filter((engine) => engine.has('retrieve'));
  if (retrievers.length > 0 || engines.length > known.length) {
    const modes = new Set<string>();
    for (const engine of retrievers) for (const mode of stringArray(engine.capabilities!.retrieve!.modes)) modes.add(mode);
    const retrieve: JsonObject = { maxK: settings.maxK };
    if (modes.size > 0) retrieve.modes = [...modes].sort();
    caps.retrieve = retrieve;
  }
  caps.catalog = { engines: engines.length };
  caps.streaming = {};

  for (const key of ROUTED_CAPABILITIES) {
    const providers = known.filter((engine) => engine.has(key));
    if (providers.length === 0) continue;
    caps[key] = providers.length === 1 ? { ...providers[0]!.capabilities![key]! } : mergedMetadata(key, providers);
  }

  const graphEngines = known.filter((engine) => engine.has('graph'));
  if (graphEngines.length > 0) {
    const ops = new Set<string>();
    for (const engine of graphEngines) for (const op of stringArray(engine.capabilities!.graph!.ops)) ops.add(op);
    caps.graph = { ops: [...ops].sort() };
  }
  if (known.some((engine) => engine.has('log'))) caps.log = {};
  for (const engine of known) {
    for (const key of Object.keys(engine.capabilities!)) {
      if (key.startsWith('x-') && !(key in caps)) caps[key] = {};
    }
  }
  return caps;
}

/** Several providers: only metadata that is true whichever of them serves the call. */
function mergedMetadata(key: string, providers: readonly Engine[]): JsonObject {
  const values = providers.map((engine) => engine.capabilities![key]!);
  if (key === 'rerank' || key === 'transform') {
    const methods = new Set<string>();
    for (const value of values) for (const m of stringArray(value.methods)) methods.add(m);
    return { methods: [...methods].sort() };
  }
  if (key === 'index') {
    return { writable: values.some((value) => value.writable === true) };
  }
  if (key === 'memory') {
    const scopes = new Set<string>();
    for (const value of values) for (const s of stringArray(value.scopes)) scopes.add(s);
    return { scopes: [...scopes].sort() };
  }
  // embed / sparseEmbed / multiVector: dimension and identity hold only when every provider agrees
  // (routing may resolve to any of them; mixed embedding spaces must never be implied, §15.7).
  const first = values[0]!;
  const same = values.every((value) => value.identity === first.identity && value.dimension === first.dimension);
  return same ? { ...first } : {};
}
