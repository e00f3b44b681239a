/**
 * MCP over stdin/stdout (Node): the SDK's `serveStdio` pins one server instance per connection
 * (2026-07-28 or a 2025-era `initialize`), and that instance follows the catalog, so a client's
 * listen stream (or, 2025 era, its unsolicited notifications) hears of engine changes. stdout
 * carries MCP frames only; the gateway logs to stderr.
 */
import type { Readable, Writable } from 'node:stream';
import { serveStdio, StdioServerTransport } from '@modelcontextprotocol/server/stdio';
import type { RcpService } from '../core/service/contract.js';
import type { SessionOptions } from '../core/session/session.js';
import { RcpBridge } from './bridge.js';
import type { McpFacade } from './facade.js';
import { followCatalog } from './follow.js';
import { mcpLineGate } from './stdio-lines.js';

/** What a line may weigh when the caller names no cap: the gateway's default `maxBodyBytes`. */
const DEFAULT_MAX_LINE_BYTES = 1024 * 1024;

/**
 * The SDK's transport, telling us when it closes, for whatever reason: stdin's end, and also a
 * stdout that failed (the host gone: EPIPE) or its own read buffer refusing. After those, stdin
 * is paused and never ends, so stdin events alone left the process serving nobody for ever.
 */
class ClosingTransport extends StdioServerTransport {
  constructor(
    input: Readable,
    output: Writable,
    private readonly onClosed: () => void,
  ) {
    super(input, output);
  }

  override async close(): Promise<void> {
    await super.close();
    this.onClosed();
  }
}

export interface McpStdioOptions {
  service: RcpService;
  session?: Partial<SessionOptions>;
  input?: Readable;
  output?: Writable;
  /** The longest line accepted (`gateway.maxBodyBytes`); a longer one is answered -32013 and skipped. */
  maxLineBytes?: number;
  onError?: (err: unknown) => void;
}

export interface McpStdioConnection {
  /** Resolves when the connection is gone: stdin EOF, or the transport closed (stdout failed, say). */
  readonly ended: Promise<void>;
  /**
   * Let tool calls finish (up to `drainTimeoutMs`); past it, `failRemaining` answers the calls
   * still running (-32010) and they get a moment to be written; then end listen streams cleanly
   * and close.
   */
  close(drainTimeoutMs: number, failRemaining?: () => void): Promise<void>;
}

export function serveMcpStdio(facade: McpFacade, options: McpStdioOptions): McpStdioConnection {
  const input = options.input ?? process.stdin;
  const output = options.output ?? process.stdout;
  const onError = options.onError ?? ((): void => undefined);
  const bridge = new RcpBridge({ service: options.service, transport: 'stdio', ...(options.session ? { session: options.session } : {}) });
  let closed: () => void = () => undefined;
  const ended = new Promise<void>((resolve) => {
    closed = resolve;
    input.once('end', () => resolve());
    input.once('close', () => resolve());
  });
  const lines = input.pipe(mcpLineGate(output, options.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES));
  const handle = serveStdio(
    ({ era }) => {
      const instance = facade.createInstance(bridge, era);
      const stop = followCatalog(instance, facade.watch, era, onError);
      const protocol = instance.server.server;
      const previous = protocol.onclose;
      protocol.onclose = () => {
        stop();
        previous?.();
      };
      return instance.server;
    },
    { transport: new ClosingTransport(lines, output, () => closed()), onerror: onError },
  );
  return {
    ended,
    close: async (drainTimeoutMs, failRemaining) => {
      await bridge.drain(drainTimeoutMs, failRemaining);
      await handle.close();
    },
  };
}
