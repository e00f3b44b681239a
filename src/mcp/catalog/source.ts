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
    // The engine list and the capability set must come from one engine set: a reload switching
    // sets between the two reads would report capabilities of engines the list does not have yet.
    for (let attempt = 1; ; attempt++) {
      const before = signature(bridge.service.describe().capabilities);
      const outcome = await bridge.call({ method: 'catalog/list', params: {}, requestId: `catalog-watch-${++reads}` });
      if (!outcome.ok) throw new Error(`catalog/list failed: ${outcome.error.code} ${outcome.error.message}`);
      const capabilities = bridge.service.describe().capabilities;
      if (signature(capabilities) === before || attempt === MAX_CONSISTENT_READS) return snapshotOf(outcome.result, capabilities);
    }
  };
}

/** A reload is rare; two in a row during one read rarer still. */
const MAX_CONSISTENT_READS = 3;

function signature(value: unknown): string {
  return JSON.stringify(value);
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
