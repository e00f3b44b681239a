/**
 * The catalog as MCP resources, the things a client subscribes to for change notifications:
 *  - `rcpgw://catalog`: the whole `catalog/list` answer (§7.13) with live state per engine;
 *    updated whenever an engine is added, removed, goes down or up, or its breaker moves.
 *  - `rcpgw://engines/{id}`: one engine's entry; the list of these changes when a reload adds
 *    or removes engines, and each one is updated when its engine's state changes.
 * Reads are live `catalog/list` calls through the bridge.
 */
import {
  ProtocolError,
  ProtocolErrorCode,
  ResourceNotFoundError,
  ResourceTemplate,
  type McpServer,
  type ServerContext,
} from '@modelcontextprotocol/server';
import { isJsonObject, type JsonObject } from '../../core/protocol/jsonrpc.js';
import { callRcp, type ToolEnv } from '../tools/call.js';

export const CATALOG_URI = 'rcpgw://catalog';
export const ENGINE_URI_PREFIX = 'rcpgw://engines/';

export function engineUri(id: string): string {
  return `${ENGINE_URI_PREFIX}${encodeURIComponent(id)}`;
}

const JSON_MIME = 'application/json';

export function registerCatalogResources(server: McpServer, env: ToolEnv): void {
  server.registerResource(
    'catalog',
    CATALOG_URI,
    {
      title: 'Engine catalog',
      description: 'Every engine this gateway federates, with capabilities and live state (status, breaker). Subscribe to hear of changes.',
      mimeType: JSON_MIME,
    },
    async (uri, ctx) => ({ contents: [{ uri: uri.href, mimeType: JSON_MIME, text: JSON.stringify(await readCatalog(env, ctx)) }] }),
  );

  const template = new ResourceTemplate(`${ENGINE_URI_PREFIX}{id}`, {
    list: () => ({
      resources: env.catalog.engines.map((engine) => ({
        uri: engineUri(engine.id),
        name: `engine ${engine.id}`,
        description: `Engine ${engine.id}: ${engine.status}, breaker ${engine.breaker}.`,
        mimeType: JSON_MIME,
      })),
    }),
  });
  server.registerResource(
    'engine',
    template,
    {
      title: 'Engine',
      description: 'One federated engine: identity, capabilities and live state.',
      mimeType: JSON_MIME,
    },
    async (uri, variables, ctx) => {
      const id = decodedId(String(variables.id));
      if (id === undefined) throw new ResourceNotFoundError(uri.href); // not percent-encoding: names no engine
      const catalog = await readCatalog(env, ctx);
      const engines: unknown[] = Array.isArray(catalog.engines) ? catalog.engines : [];
      const entry = engines.find((candidate) => isJsonObject(candidate) && candidate.id === id);
      if (!entry) throw new ResourceNotFoundError(uri.href);
      return { contents: [{ uri: uri.href, mimeType: JSON_MIME, text: JSON.stringify(entry) }] };
    },
  );
}

/** An engine id from its URI segment; undefined for bad percent-encoding (a client's mistake, not ours). */
function decodedId(segment: string): string | undefined {
  try {
    return decodeURIComponent(segment);
  } catch {
    return undefined;
  }
}

async function readCatalog(env: ToolEnv, ctx: ServerContext): Promise<JsonObject> {
  const outcome = await callRcp(env, ctx, 'catalog/list', {});
  // Resource reads have no tool-error channel: an RCP failure is a protocol error for the host.
  if (!outcome.ok)
    throw new ProtocolError(
      ProtocolErrorCode.InternalError,
      `catalog/list failed: RCP error ${outcome.error.code}: ${outcome.error.message}`,
    );
  return outcome.result;
}
