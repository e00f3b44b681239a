/**
 * Helpers for the MCP suites: the official MCP client connected to a running gateway over
 * Streamable HTTP (`/mcp` beside the RCP endpoint) or over stdio (`rcp-gateway mcp-stdio`),
 * in either protocol era, and small readers for tool results and notifications.
 */
import { Client, StreamableHTTPClientTransport, type CallToolResult } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import type { Readable } from 'node:stream';
import { GATEWAY_CLI, REPO_ROOT } from '../support/processes.js';

export type Era = 'modern' | 'legacy';

/**
 * The SDK probes a stdio server's era from a sibling process when it is exactly
 * StdioClientTransport; a subclass probes in place, so the gateway (and its engines) start once.
 */
class InPlaceStdioTransport extends StdioClientTransport {}

function clientFor(era: Era): Client {
  return new Client({ name: 'rcp-gateway-tests', version: '1.0.0' }, era === 'modern' ? { versionNegotiation: { mode: { pin: '2026-07-28' } } } : {});
}

/** `http://h:p/rcp` → `http://h:p/mcp` */
export function mcpUrl(rcpUrl: string): URL {
  return new URL('/mcp', rcpUrl);
}

export async function connectHttp(rcpUrl: string, era: Era = 'modern'): Promise<Client> {
  const client = clientFor(era);
  await client.connect(new StreamableHTTPClientTransport(mcpUrl(rcpUrl)));
  return client;
}

export interface StdioConnection {
  client: Client;
  transport: StdioClientTransport;
  stderr(): string;
}

/** Spawn `rcp-gateway mcp-stdio --config FILE` and connect the MCP client to it. */
export async function connectStdio(configFile: string, era: Era = 'modern'): Promise<StdioConnection> {
  const transport = new InPlaceStdioTransport({
    command: process.execPath,
    args: [GATEWAY_CLI, 'mcp-stdio', '--config', configFile],
    cwd: REPO_ROOT,
    stderr: 'pipe',
    env: { ...process.env, RCPGW_LOG_FORMAT: 'json' } as Record<string, string>,
  });
  let stderr = '';
  (transport.stderr as Readable | null)?.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
  });
  const client = clientFor(era);
  await client.connect(transport);
  return { client, transport, stderr: () => stderr };
}

/** The text of every text block of a tool result, joined. */
export function textOf(result: CallToolResult): string {
  return result.content.map((block) => (block.type === 'text' ? block.text : '')).join('\n');
}

export interface SearchHit {
  id: string | number;
  score: number;
  text?: string;
  meta?: { engine?: string; engineRank?: number; engines?: Array<{ engine: string; rank: number }> };
}

export interface SearchOutput {
  query: string;
  hits: SearchHit[];
  engines: string[];
  degraded?: Array<{ engine: string; code?: number; reason?: string }>;
  nextCursor?: string;
}

export interface ToolErrorOutput {
  error: { code: number; symbol: string; message: string; retryable: boolean; data?: { field?: string; option?: string } };
}

export function structured<T>(result: CallToolResult): T {
  if (result.structuredContent === undefined) throw new Error(`no structured content in ${JSON.stringify(result)}`);
  return result.structuredContent as T;
}

/** Resolves with the first value `check` returns that is not undefined (evaluated on each `poke`). */
export function eventually<T>(what: string, check: () => T | undefined, timeoutMs = 15_000): { poke: () => void; value: Promise<T> } {
  let poke: () => void = () => undefined;
  const value = new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), timeoutMs);
    poke = () => {
      const result = check();
      if (result === undefined) return;
      clearTimeout(timer);
      resolve(result);
    };
  });
  return { poke, value };
}
