/**
 * `catalog/list` (§7.13): one entry per federated engine, its identity and capabilities, plus
 * the gateway's view of its health in `_meta` (status, breaker, load, routing policy). The
 * engine's endpoint is listed only when the gateway or the entry exposes it.
 */
import type { JsonObject } from '../protocol/jsonrpc.js';
import type { Engine } from '../upstream/engine.js';
import { VENDOR_KEY } from './vendor.js';

export function catalogList(engines: readonly Engine[], exposeEndpoints: boolean): JsonObject {
  return { engines: engines.map((engine) => catalogEntry(engine, exposeEndpoints)) };
}

export function catalogEntry(engine: Engine, expose: boolean): JsonObject {
  const breaker = engine.breaker.snapshot();
  const showEndpoint = engine.endpointShown(expose);
  const entry: JsonObject = {
    id: engine.id,
    server: engine.server ?? { name: engine.id },
    capabilities: engine.capabilities ?? {},
    _meta: {
      status: engine.status,
      breaker: engine.breaker.currentState,
      breakerOpenings: engine.breaker.consecutiveOpenings,
      ...(breaker.retryInMs !== undefined ? { breakerRetryInMs: breaker.retryInMs } : {}),
      inFlight: engine.activeCalls,
      weight: engine.weight,
      required: engine.required,
      priority: engine.priority,
      queueDepth: engine.queueDepth,
      // The platform's text names addresses and ports; a client sees it only where endpoints are shown.
      ...(engine.lastError && engine.status !== 'ready' ? { lastError: engine.lastErrorShown(expose) } : {}),
    },
  };
  // Replicas by index, never by URL: endpoints stay hidden unless exposed (§4.4 vendor key).
  const replicaSet = engine.replicaSet;
  if (replicaSet) (entry._meta as JsonObject)[VENDOR_KEY] = { ...replicaSet };
  // An in-process adapter has no endpoint another client could reach.
  if (showEndpoint && engine.config.transport !== 'adapter') {
    entry.endpoint =
      engine.config.transport === 'http'
        ? { transport: 'http', url: engine.config.url ?? engine.config.urls?.[0] }
        : { transport: 'stdio', command: engine.config.command };
  }
  return entry;
}
