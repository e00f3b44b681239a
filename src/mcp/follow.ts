/**
 * Catalog changes as MCP change notifications, for the two ways an MCP server lives:
 *  - a long-lived instance (one stdio connection) follows the watch itself: its tools and
 *    resources track the catalog, and it sends the notifications; the SDK's stdio entry puts
 *    them on the client's `subscriptions/listen` streams (2026-07-28) or sends them unsolicited
 *    (2025 era: list changes to all, resource updates only to subscribers);
 *  - per-request instances (Streamable HTTP) are gone before anything changes, so the changes
 *    are published on the HTTP handler's event bus, which feeds the open listen streams.
 */
import type { ServerNotifier } from '@modelcontextprotocol/server';
import { notificationsFor } from './catalog/notifications.js';
import type { CatalogWatch } from './catalog/watch.js';
import type { McpEra, McpInstance } from './facade.js';

/** Keep `instance` in step with the catalog; returns the function that stops it. */
export function followCatalog(instance: McpInstance, watch: CatalogWatch, era: McpEra, onError: (err: unknown) => void): () => void {
  const { server, env, tools, subscriptions } = instance;
  return watch.subscribe((events, snapshot) => {
    env.catalog = snapshot;
    if (!server.isConnected()) return;
    const plan = notificationsFor(events);
    if (plan.toolsChanged) tools.sync(); // each registration change announces itself (debounced)
    if (plan.resourcesChanged) server.sendResourceListChanged();
    for (const uri of plan.updated) {
      if (era === 'legacy' && !subscriptions.has(uri)) continue; // 2025: only to subscribers
      server.server.sendResourceUpdated({ uri }).catch(onError);
    }
  });
}

/** Publish catalog changes to every open HTTP `subscriptions/listen` stream; returns the unsubscribe. */
export function publishCatalog(watch: CatalogWatch, notify: ServerNotifier): () => void {
  return watch.subscribe((events) => {
    const plan = notificationsFor(events);
    if (plan.toolsChanged) notify.toolsChanged();
    if (plan.resourcesChanged) notify.resourcesChanged();
    for (const uri of plan.updated) notify.resourceUpdated(uri);
  });
}
