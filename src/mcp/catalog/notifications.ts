/**
 * Which MCP change notifications a batch of catalog events calls for:
 *  - an engine added or removed: the list of engine resources changed, and so did the tools
 *    (the `engines` choice of `search`);
 *  - the gateway's capability set changed: the tools changed (which exist, their schemas);
 *  - anything about an engine: `rcpgw://catalog` and that engine's resource were updated.
 */
import { CATALOG_URI, engineUri } from './resources.js';
import type { CatalogEvent } from './snapshot.js';

export interface CatalogNotifications {
  toolsChanged: boolean;
  resourcesChanged: boolean;
  /** Resource URIs to send `notifications/resources/updated` for, the catalog first. */
  updated: string[];
}

export function notificationsFor(events: readonly CatalogEvent[]): CatalogNotifications {
  let toolsChanged = false;
  let resourcesChanged = false;
  const updated = new Set<string>();
  for (const event of events) {
    if (event.kind === 'capabilities-changed') {
      toolsChanged = true;
      continue;
    }
    updated.add(CATALOG_URI);
    if (event.kind === 'engine-added' || event.kind === 'engine-removed') {
      toolsChanged = true;
      resourcesChanged = true;
    }
    if (event.kind !== 'engine-removed') updated.add(engineUri(event.engine));
  }
  return { toolsChanged, resourcesChanged, updated: [...updated] };
}
