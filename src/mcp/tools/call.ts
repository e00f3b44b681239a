/**
 * What every tool handler shares: the MCP request's context turned into an RCP call through the
 * bridge — its id, its cancellation signal, its progress token (mapped to MCP progress), and the
 * HTTP headers of the MCP request (so `traceparent` and `x-rcpgw-engine` mean what they mean
 * on the RCP endpoint).
 */
import type { ServerContext } from '@modelcontextprotocol/server';
import type { JsonObject } from '../../core/protocol/jsonrpc.js';
import type { RcpBridge, RcpOutcome } from '../bridge.js';
import { mcpProgressRelay } from '../progress.js';
import type { CatalogSnapshot } from '../catalog/snapshot.js';

/** What one MCP server instance (one HTTP request, or one stdio connection) works with. */
export interface ToolEnv {
  bridge: RcpBridge;
  /** The catalog as last observed (engine ids and gateway capabilities shape the schemas). */
  catalog: CatalogSnapshot;
  /** Lower-cased headers of the MCP HTTP request; empty over stdio. */
  headers: Readonly<Record<string, string>>;
}

export function callRcp(env: ToolEnv, ctx: ServerContext, method: string, params: JsonObject): Promise<RcpOutcome> {
  const token = ctx.mcpReq._meta?.progressToken;
  const onProgress =
    token === undefined
      ? undefined
      : mcpProgressRelay((progress) => {
          // Best effort, like RCP progress (§9: advisory); a closed stream must not fail the call.
          ctx.mcpReq.notify({ method: 'notifications/progress', params: { progressToken: token, ...progress } }).catch(() => undefined);
        });
  return env.bridge.call({
    method,
    params,
    requestId: `mcp:${String(ctx.mcpReq.id)}`,
    signal: ctx.mcpReq.signal,
    headers: env.headers,
    ...(onProgress ? { onProgress } : {}),
  });
}
