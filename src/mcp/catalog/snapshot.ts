/**
 * The engine catalog as the facade observes it: the gateway's own `catalog/list` answer (§7.13,
 * with the gateway's live `_meta.status` / `_meta.breaker` per engine) and its capability set.
 * Two snapshots diff into the change events a watcher is told about.
 */
import type { Capabilities } from '../../core/protocol/capabilities.js';
import { isJsonObject, type JsonObject } from '../../core/protocol/jsonrpc.js';

export interface CatalogEngine {
  id: string;
  /** `starting` | `ready` | `down` | `stopped` (the gateway's engine status). */
  status: string;
  /** `closed` | `open` | `half-open` (the engine's circuit breaker). */
  breaker: string;
  /** The engine's `catalog/list` entry, verbatim. */
  entry: JsonObject;
}

export interface CatalogSnapshot {
  engines: readonly CatalogEngine[];
  /** The gateway's advertised capabilities (§16.4): they decide which tools exist. */
  capabilities: Capabilities;
}

export type CatalogEvent =
  | { kind: 'engine-added'; engine: string; status: string; breaker: string }
  | { kind: 'engine-removed'; engine: string }
  | { kind: 'engine-status'; engine: string; from: string; to: string }
  | { kind: 'engine-breaker'; engine: string; from: string; to: string }
  | { kind: 'capabilities-changed' };

export const EMPTY_CATALOG: CatalogSnapshot = { engines: [], capabilities: {} };

/** A snapshot from a `catalog/list` result and the gateway's capabilities. */
export function snapshotOf(result: JsonObject, capabilities: Capabilities): CatalogSnapshot {
  const list = Array.isArray(result.engines) ? result.engines : [];
  const engines: CatalogEngine[] = [];
  for (const entry of list) {
    if (!isJsonObject(entry) || typeof entry.id !== 'string') continue;
    const meta = isJsonObject(entry._meta) ? entry._meta : {};
    engines.push({
      id: entry.id,
      status: typeof meta.status === 'string' ? meta.status : 'unknown',
      breaker: typeof meta.breaker === 'string' ? meta.breaker : 'unknown',
      entry,
    });
  }
  return { engines, capabilities };
}

/** What changed from `before` to `after`, engines in catalog order, removals first. */
export function diffCatalog(before: CatalogSnapshot, after: CatalogSnapshot): CatalogEvent[] {
  const events: CatalogEvent[] = [];
  const previous = new Map(before.engines.map((engine) => [engine.id, engine]));
  const current = new Set(after.engines.map((engine) => engine.id));
  for (const engine of before.engines) if (!current.has(engine.id)) events.push({ kind: 'engine-removed', engine: engine.id });
  for (const engine of after.engines) {
    const old = previous.get(engine.id);
    if (!old) {
      events.push({ kind: 'engine-added', engine: engine.id, status: engine.status, breaker: engine.breaker });
      continue;
    }
    if (old.status !== engine.status) events.push({ kind: 'engine-status', engine: engine.id, from: old.status, to: engine.status });
    if (old.breaker !== engine.breaker) events.push({ kind: 'engine-breaker', engine: engine.id, from: old.breaker, to: engine.breaker });
  }
  if (capabilitySignature(before.capabilities) !== capabilitySignature(after.capabilities)) events.push({ kind: 'capabilities-changed' });
  return events;
}

/** Key order does not matter to a capability set; values do. */
function capabilitySignature(capabilities: Capabilities): string {
  return JSON.stringify(
    Object.keys(capabilities)
      .sort()
      .map((key) => [key, capabilities[key]]),
  );
}
