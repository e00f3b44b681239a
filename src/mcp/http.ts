/**
 * The MCP endpoint beside the RCP one on the gateway's HTTP listener: Streamable HTTP at `/mcp`,
 * served by the SDK's `createMcpHandler` — stateless like the RCP side (a fresh server instance
 * per request; 2026-07-28 clients, and 2025-era clients through the SDK's stateless fallback).
 * On a loopback bind the SDK's Hono guards validate `Host` and `Origin` (DNS rebinding).
 * Tool calls share the listener's admission gate and shutdown registry, so the in-flight cap,
 * the drain and the -32010 answer at the drain timeout hold for MCP callers too. Catalog
 * changes go out on the handler's event bus to every open `subscriptions/listen` stream.
 */
import { localhostHostValidation, localhostOriginValidation } from '@modelcontextprotocol/hono';
import { createMcpHandler, type McpHttpHandler } from '@modelcontextprotocol/server';
import type { Context, Env, Hono } from 'hono';
import { ListenStreams, whenBodyEnds } from './listen-streams.js';
import { envelopeFault, isJsonMediaType, NOT_JSON, payloadTooLarge, toResponse } from '../core/http/envelope.js';
import { BodyTimeoutError, type BodyReader } from '../core/http/request-io.js';
import type { RcpService } from '../core/service/contract.js';
import type { SessionOptions } from '../core/session/session.js';
import { RcpBridge } from './bridge.js';
import type { McpFacade } from './facade.js';
import { publishCatalog } from './follow.js';

export const MCP_PATH = '/mcp';

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '::1', '[::1]']);

export interface McpHttpOptions {
  /** The service RCP requests are served by (observed: MCP calls show in metrics and the request log). */
  service: RcpService;
  session?: Partial<SessionOptions>;
  /** The listener's bind address: a loopback one turns on the Host/Origin guards. */
  host: string;
  maxBodyBytes: number;
  /** SSE keep-alive comments on open streams (the RCP side's `sseHeartbeatMs`). */
  keepAliveMs?: number;
  path?: string;
  onError?: (err: Error) => void;
}

export class McpHttpEndpoint {
  private readonly bridge: RcpBridge;
  private readonly handler: McpHttpHandler;
  private readonly unpublish: () => void;
  private closing = false;
  private readonly listenStreams = new ListenStreams();

  constructor(
    facade: McpFacade,
    private readonly options: McpHttpOptions,
  ) {
    this.bridge = new RcpBridge({ service: options.service, transport: 'http', ...(options.session ? { session: options.session } : {}) });
    this.handler = createMcpHandler(({ era, requestInfo }) => facade.createInstance(this.bridge, era, headersOf(requestInfo)).server, {
      maxRequestBodySize: options.maxBodyBytes,
      ...(options.keepAliveMs !== undefined ? { keepAliveMs: options.keepAliveMs } : {}),
      ...(options.onError ? { onerror: options.onError } : {}),
    });
    this.unpublish = publishCatalog(facade.watch, this.handler.notify);
  }

  get path(): string {
    return this.options.path ?? MCP_PATH;
  }

  /**
   * `readBody`, when given, reads a POST's body as the RCP endpoint does (the listener's body
   * timeout and size cap) before the SDK sees it: the SDK reads the web Request itself, outside
   * that timeout, so a stalled body held its connection until node's 300 s request timeout.
   */
  mount<E extends Env>(app: Hono<E>, readBody?: BodyReader<E>, clientAddress?: (c: Context<E>) => string | undefined): void {
    if (LOOPBACK.has(this.options.host)) app.use(this.path, localhostHostValidation(), localhostOriginValidation());
    app.all(this.path, async (c) => {
      if (this.closing) {
        return c.json({ jsonrpc: '2.0', id: null, error: { code: -32000, message: 'server is shutting down' } }, 503, {
          'retry-after': '1',
        });
      }
      // Anything but a JSON POST is the SDK's to refuse (405, 415) as it does, body unread.
      if (!readBody || c.req.method !== 'POST' || !isJsonMediaType(c.req.header('content-type'))) return this.handler.fetch(c.req.raw);
      let text: string | undefined;
      try {
        text = await readBody(c, this.options.maxBodyBytes);
      } catch (err) {
        // Answered as the RCP endpoint answers the same faults (core/http/envelope.ts).
        if (err instanceof BodyTimeoutError) return toResponse(envelopeFault(408, err.message));
        throw err;
      }
      if (text === undefined) return toResponse(payloadTooLarge(this.options.maxBodyBytes));
      let parsedBody: unknown;
      try {
        parsedBody = JSON.parse(text);
      } catch {
        return toResponse(NOT_JSON);
      }
      if (!isListen(parsedBody)) return this.handler.fetch(c.req.raw, { parsedBody });
      const admitted = this.listenStreams.admit(clientAddress?.(c) ?? 'unknown');
      if ('refused' in admitted) return admitted.refused;
      try {
        return whenBodyEnds(await this.handler.fetch(c.req.raw, { parsedBody }), admitted.release);
      } catch (err) {
        admitted.release();
        throw err;
      }
    });
  }

  /**
   * Graceful close: refuse new MCP requests, let tool calls finish (up to `drainTimeoutMs`; the
   * listener's drain answers the rest -32010), then end every listen stream with its final
   * result, so subscribers see a clean close rather than a dropped connection.
   */
  async close(drainTimeoutMs: number): Promise<void> {
    this.closing = true;
    // Calls still running at the drain timeout are answered -32010 by the listener's drain, which
    // runs beside this close on the same timeout: wait for those answers to be written. Closing
    // the handler first cut each such call off with an empty HTTP 499 instead.
    await this.bridge.drain(drainTimeoutMs);
    this.unpublish();
    await this.handler.close();
  }
}

function isListen(body: unknown): boolean {
  return typeof body === 'object' && body !== null && (body as { method?: unknown }).method === 'subscriptions/listen';
}

function headersOf(request: Request | undefined): Readonly<Record<string, string>> {
  const headers: Record<string, string> = {};
  request?.headers.forEach((value, name) => {
    headers[name] = value; // Headers yields lower-cased names
  });
  return headers;
}
