/**
 * How the `rcp-gateway` command (Node) wires the MCP facade: the facade of the process, and what
 * `serve` mounts beside its RCP endpoint. Imported on demand by the commands that serve MCP, so
 * the others (stdio, check-config, engines, --help) never load the MCP SDK.
 */
import type { GatewaySettings } from '../core/config/schema.js';
import type { RcpService } from '../core/service/contract.js';
import type { Logger } from '../node/observability/log.js';
import type { Operations } from '../node/operations.js';
import type { BesideMount } from '../node/server/listen.js';
import { CatalogWatchService } from './catalog/rcp-watch.js';
import { McpFacade } from './facade.js';
import { McpHttpEndpoint } from './http.js';

/**
 * What `serve` offers beside plain RCP: the MCP endpoint at /mcp (tool calls share the listener's
 * admission gate and shutdown registry) and, for RCP clients, x-rcpgw/catalog/watch.
 */
export function mcpBesideRcp(
  mcp: McpFacade,
  service: RcpService,
  ops: Operations,
  settings: GatewaySettings,
  logger: Logger,
): {
  rcpService: CatalogWatchService;
  mount: BesideMount;
  close: (drainTimeoutMs: number) => Promise<void>;
} {
  const rcpService = new CatalogWatchService(service, mcp.watch);
  let endpoint: McpHttpEndpoint | undefined;
  return {
    rcpService,
    mount: (app, shared, readBody) => {
      endpoint = new McpHttpEndpoint(mcp, {
        service,
        session: { ...ops.sessionOptions(), ...shared },
        host: settings.host,
        maxBodyBytes: settings.maxBodyBytes,
        keepAliveMs: settings.sseHeartbeatMs,
        onError: (err) => logger.debug({ err: err.message }, 'mcp'),
      });
      endpoint.mount(app, readBody, (c) => c.env.incoming?.socket.remoteAddress);
    },
    // Catalog watches answer at once, so their streams end before the drain; MCP tool calls drain
    // with the RCP ones (shared gate), then the MCP listen streams end with their final result.
    close: async (drainTimeoutMs) => {
      rcpService.close();
      await endpoint?.close(drainTimeoutMs);
      mcp.close();
    },
  };
}

/** The facade of one gateway process; catalog watch failures are logged, never fatal. */
export function mcpFacade(name: string, version: string, logger: Logger): McpFacade {
  return new McpFacade({ name, version }, (err) =>
    logger.warn({ err: err instanceof Error ? err.message : String(err) }, 'mcp catalog watch'),
  );
}
