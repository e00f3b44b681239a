/**
 * Node HTTP listener for the Hono app (@hono/node-server), with admission control (gateway-wide
 * in-flight cap), and a graceful close: stop accepting, drain in-flight requests up to a timeout.
 */
import { serve, type ServerType } from '@hono/node-server';
import type { AddressInfo } from 'node:net';
import type { GatewaySettings } from '../config/schema.js';
import type { Logger } from '../observability/log.js';
import { createHttpApp, type HttpServerOptions } from './http.js';
import type { RcpService } from './service.js';

export interface RunningHttpServer {
  url: string;
  port: number;
  server: ServerType;
  inFlight(): number;
  close(drainTimeoutMs: number): Promise<void>;
}

export async function startHttpServer(
  service: RcpService,
  settings: GatewaySettings,
  logger: Logger,
  extra: Partial<HttpServerOptions> = {},
): Promise<RunningHttpServer> {
  let inFlight = 0;
  let draining = false;
  const idle: Array<() => void> = [];
  const app = createHttpApp(service, {
    basePath: settings.basePath,
    maxBodyBytes: settings.maxBodyBytes,
    sseHeartbeatMs: settings.sseHeartbeatMs,
    streaming: true,
    ...(settings.httpSessions
      ? { httpSessions: { ttlMs: settings.httpSessionTtlMs, maxSessions: settings.maxHttpSessions, maxInFlightPerSession: settings.maxInFlight } }
      : {}),
    corsOrigins: settings.corsOrigins,
    admit: () => {
      if (draining) return { ok: false, retryAfterMs: 1_000 };
      if (inFlight >= settings.maxInFlight) return { ok: false, retryAfterMs: 250 };
      inFlight++;
      return {
        ok: true,
        release: () => {
          inFlight--;
          if (inFlight === 0) for (const resolve of idle.splice(0)) resolve();
        },
      };
    },
    ...extra,
  });
  const server = await new Promise<ServerType>((resolve, reject) => {
    const s = serve({ fetch: app.fetch, hostname: settings.host, port: settings.port }, () => resolve(s));
    s.once('error', reject);
  });
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  const url = `http://${host}:${address.port}${settings.basePath}`;
  logger.info({ url }, 'listening');
  return {
    url,
    port: address.port,
    server,
    inFlight: () => inFlight,
    close: async (drainTimeoutMs: number) => {
      draining = true;
      server.close();
      if (inFlight > 0) {
        await Promise.race([
          new Promise<void>((resolve) => idle.push(resolve)),
          new Promise<void>((resolve) => setTimeout(resolve, drainTimeoutMs).unref()),
        ]);
      }
      (server as unknown as { closeAllConnections?: () => void }).closeAllConnections?.();
    },
  };
}
