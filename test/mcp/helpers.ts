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
  return new Client(
    { name: 'rcp-gateway-tests', version: '1.0.0' },
    era === 'modern' ? { versionNegotiation: { mode: { pin: '2026-07-28' } } } : {},
  );
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

export interface Note {
  method: string;
  uri?: string;
}

/** Change notifications a client received, in order, with a way to wait for the next ones. */
export class NoteLog {
  readonly notes: Note[] = [];
  private waiters: Array<{ from: number; match: (note: Note) => boolean; resolve: (index: number) => void }> = [];

  /** Record every change notification `client` receives (register before `listen`). */
  static of(client: Client): NoteLog {
    const log = new NoteLog();
    client.setNotificationHandler('notifications/tools/list_changed', () => log.push({ method: 'tools/list_changed' }));
    client.setNotificationHandler('notifications/resources/list_changed', () => log.push({ method: 'resources/list_changed' }));
    client.setNotificationHandler('notifications/resources/updated', (n) => log.push({ method: 'resources/updated', uri: n.params.uri }));
    return log;
  }

  /** Where the next note will be recorded (pass to `waitFor` to ignore what came before). */
  get mark(): number {
    return this.notes.length;
  }

  /** Resolves with the index of the first note at or after `from` that matches. */
  waitFor(match: (note: Note) => boolean, from = 0, timeoutMs = 15_000): Promise<number> {
    const found = this.notes.findIndex((note, index) => index >= from && match(note));
    if (found >= 0) return Promise.resolve(found);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`no matching notification after #${from}; got ${JSON.stringify(this.notes.slice(from))}`)),
        timeoutMs,
      );
      this.waiters.push({
        from,
        match,
        resolve: (index) => {
          clearTimeout(timer);
          resolve(index);
        },
      });
    });
  }

  private push(note: Note): void {
    const index = this.notes.push(note) - 1;
    this.waiters = this.waiters.filter((waiter) => {
      if (index < waiter.from || !waiter.match(note)) return true;
      waiter.resolve(index);
      return false;
    });
  }
}

export const updated =
  (uri: string) =>
  (note: Note): boolean =>
    note.method === 'resources/updated' && note.uri === uri;
export const is =
  (method: string) =>
  (note: Note): boolean =>
    note.method === method;
