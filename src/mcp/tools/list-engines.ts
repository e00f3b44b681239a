/**
 * `list_engines`: the gateway's `catalog/list` (§7.13) with the live state it adds per engine
 * (status, breaker, last error), so a model can tell which engines a search can reach and
 * pick some by id. Each entry's capabilities are listed by name; the full objects are in the
 * `rcpgw://catalog` resource.
 */
import type { CallToolResult, McpServer, RegisteredTool } from '@modelcontextprotocol/server';
import { z } from 'zod';
import { isJsonObject, type JsonObject } from '../../core/protocol/jsonrpc.js';
import { callRcp, type ToolEnv } from './call.js';
import { thrownToolError, toolError } from './errors.js';
import { oneLine } from './render.js';

const EngineSchema = z.object({
  id: z.string(),
  name: z.string().optional(),
  version: z.string().optional(),
  status: z.string().describe('starting, ready, down or stopped.'),
  breaker: z.string().describe('closed (healthy), open (calls refused while it recovers) or half-open (being probed).'),
  capabilities: z.array(z.string()).describe('RCP capabilities the engine offers (retrieve, rerank, embed, ...).'),
  required: z.boolean().optional(),
  lastError: z.string().optional(),
});

export const ListEnginesOutputSchema = z.object({ engines: z.array(EngineSchema) });

type EngineView = z.infer<typeof EngineSchema>;

export function registerListEngines(server: McpServer, env: ToolEnv): RegisteredTool {
  return server.registerTool(
    'list_engines',
    {
      title: 'List engines',
      description:
        'List the retrieval engines this gateway federates, with their live state (ready or down, breaker) ' +
        'and what each offers. Use the ids to restrict search to some engines.',
      outputSchema: ListEnginesOutputSchema,
      annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
    },
    async (ctx): Promise<CallToolResult> => {
      try {
        const outcome = await callRcp(env, ctx, 'catalog/list', {});
        if (!outcome.ok) return toolError('list_engines', outcome.error);
        const engines = (Array.isArray(outcome.result.engines) ? outcome.result.engines : []).filter(isJsonObject).map(engineView);
        return { content: [{ type: 'text', text: renderEngines(engines) }], structuredContent: { engines } };
      } catch (err) {
        return thrownToolError('list_engines', err);
      }
    },
  );
}

function engineView(entry: JsonObject): EngineView {
  const server = isJsonObject(entry.server) ? entry.server : {};
  const meta = isJsonObject(entry._meta) ? entry._meta : {};
  const view: EngineView = {
    id: String(entry.id),
    status: typeof meta.status === 'string' ? meta.status : 'unknown',
    breaker: typeof meta.breaker === 'string' ? meta.breaker : 'unknown',
    capabilities: isJsonObject(entry.capabilities) ? Object.keys(entry.capabilities).sort() : [],
  };
  if (typeof server.name === 'string') view.name = server.name;
  if (typeof server.version === 'string') view.version = server.version;
  if (typeof meta.required === 'boolean') view.required = meta.required;
  if (typeof meta.lastError === 'string') view.lastError = oneLine(meta.lastError, 200);
  return view;
}

function renderEngines(engines: readonly EngineView[]): string {
  if (engines.length === 0) return 'No engines are configured.';
  const ready = engines.filter((engine) => engine.status === 'ready').length;
  const lines = [`${engines.length} engine${engines.length === 1 ? '' : 's'}, ${ready} ready:`];
  for (const engine of engines) {
    const who = engine.name && engine.name !== engine.id ? ` (${engine.name}${engine.version ? ` ${engine.version}` : ''})` : '';
    const error = engine.lastError ? `; last error: ${engine.lastError}` : '';
    lines.push(
      `- ${engine.id}${who}: ${engine.status}, breaker ${engine.breaker}; offers ${engine.capabilities.join(', ') || 'nothing'}${error}`,
    );
  }
  return lines.join('\n');
}
