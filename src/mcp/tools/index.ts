/**
 * The tools an MCP server instance offers, kept in step with the catalog: a tool exists while
 * the gateway advertises what it needs (`search` ← `retrieve`, `rerank` ← `rerank`;
 * `list_engines` always), and its input schema is re-advertised when the catalog changes
 * (engine ids, `maxK`, `filter`). A fresh per-request instance syncs once; a long-lived stdio
 * instance syncs again on every catalog change (each mutation sends `tools/list_changed`,
 * debounced by the server to one per tick).
 */
import type { McpServer, RegisteredTool, StandardSchemaWithJSON } from '@modelcontextprotocol/server';
import type { ToolEnv } from './call.js';
import { registerListEngines } from './list-engines.js';
import { registerRerank, rerankInputSchema } from './rerank.js';
import { advertised } from './schema.js';
import { registerSearch, searchInputSchema } from './search.js';

interface ToolSpec {
  name: string;
  available: (env: ToolEnv) => boolean;
  register: (server: McpServer, env: ToolEnv) => RegisteredTool;
  /** The input schema as of `env.catalog` (absent: the tool takes no arguments). */
  inputSchema?: (env: ToolEnv) => StandardSchemaWithJSON;
}

const TOOLS: readonly ToolSpec[] = [
  {
    name: 'search',
    available: (env) => 'retrieve' in env.catalog.capabilities,
    register: registerSearch,
    inputSchema: (env) => advertised(searchInputSchema(env)),
  },
  { name: 'list_engines', available: () => true, register: registerListEngines },
  {
    name: 'rerank',
    available: (env) => 'rerank' in env.catalog.capabilities,
    register: registerRerank,
    inputSchema: (env) => advertised(rerankInputSchema(env)),
  },
];

export class ToolSet {
  private readonly handles = new Map<string, RegisteredTool>();

  constructor(
    private readonly server: McpServer,
    private readonly env: ToolEnv,
  ) {}

  /** Register, re-advertise or remove tools to match `env.catalog`. */
  sync(): void {
    for (const spec of TOOLS) {
      const handle = this.handles.get(spec.name);
      if (!spec.available(this.env)) {
        if (handle) {
          handle.remove();
          this.handles.delete(spec.name);
        }
        continue;
      }
      if (!handle) this.handles.set(spec.name, spec.register(this.server, this.env));
      else if (spec.inputSchema) handle.update({ paramsSchema: spec.inputSchema(this.env) });
    }
  }
}
