/**
 * Connection-level guards of the Node listener against slow or greedy clients (§15.5): a cap on
 * open connections per client address, header and body read timeouts, and what they did, for
 * metrics. The body timeout itself is applied where the body is read (node-request-io.ts).
 */
import type { Server, ServerOptions } from 'node:http';
import type { Socket } from 'node:net';

/** What the guards report (metrics). */
export interface ListenerObserver {
  /** A request body started / stopped being read. */
  bodyReadStarted(): void;
  bodyReadEnded(): void;
  /** A request body stalled past the body timeout (answered 408). */
  bodyTimedOut(): void;
  /** A connection was closed at once: its address already had the most connections allowed. */
  connectionRefused(): void;
}

export const NO_OBSERVER: ListenerObserver = {
  bodyReadStarted: () => undefined,
  bodyReadEnded: () => undefined,
  bodyTimedOut: () => undefined,
  connectionRefused: () => undefined,
};

export interface GuardSettings {
  headersTimeoutMs: number;
  maxConnectionsPerIp: number;
}

/**
 * Options for `http.createServer`: Node checks header (and whole-request) timeouts only every
 * `connectionsCheckingInterval` (30 s by default), so it is tightened to match the timeout.
 */
export function guardedServerOptions(settings: GuardSettings): ServerOptions {
  return {
    headersTimeout: settings.headersTimeoutMs,
    connectionsCheckingInterval: Math.max(100, Math.min(1_000, Math.floor(settings.headersTimeoutMs / 2))),
  };
}

/** Close connections beyond `maxConnectionsPerIp` per client address as soon as they open. */
export function capConnectionsPerAddress(server: Server, maxPerAddress: number, observer: ListenerObserver): void {
  const open = new Map<string, number>();
  server.on('connection', (socket: Socket) => {
    const address = socket.remoteAddress ?? 'unknown';
    const count = open.get(address) ?? 0;
    if (count >= maxPerAddress) {
      observer.connectionRefused();
      socket.destroy();
      return;
    }
    open.set(address, count + 1);
    socket.once('close', () => {
      const left = (open.get(address) ?? 1) - 1;
      if (left <= 0) open.delete(address);
      else open.set(address, left);
    });
  });
}
