/**
 * Where catalog snapshots come from and what pokes the watch: the gateway's own `catalog/list`
 * (read in process through the bridge), and the engine hooks that fire when an engine's status
 * or breaker changes.
 */
import type { EngineHooks } from '../../core/upstream/engine.js';
import type { RcpBridge } from '../bridge.js';
import { snapshotOf, type CatalogSnapshot } from './snapshot.js';

/** Reads the catalog through `bridge` (give it the gateway itself, so these reads stay out of request metrics). */
export function catalogReader(bridge: RcpBridge): () => Promise<CatalogSnapshot> {
  let reads = 0;
  return async () => {
    const outcome = await bridge.call({ method: 'catalog/list', params: {}, requestId: `catalog-watch-${++reads}` });
    if (!outcome.ok) throw new Error(`catalog/list failed: ${outcome.error.code} ${outcome.error.message}`);
    return snapshotOf(outcome.result, bridge.service.describe().capabilities);
  };
}

export type TriggerHooks = Pick<EngineHooks, 'onStatus' | 'onBreakerTransition'>;

/** `hooks` with `poke` called after each engine status or breaker change (the original hooks run first). */
export function withCatalogTriggers<H extends TriggerHooks>(hooks: H, poke: () => void): H {
  return {
    ...hooks,
    onStatus: (...args: Parameters<NonNullable<TriggerHooks['onStatus']>>) => {
      hooks.onStatus?.(...args);
      poke();
    },
    onBreakerTransition: (...args: Parameters<NonNullable<TriggerHooks['onBreakerTransition']>>) => {
      hooks.onBreakerTransition?.(...args);
      poke();
    },
  };
}
