/**
 * Node HTTP listener for the Hono app (@hono/node-server), with admission control (gateway-wide
 * in-flight cap), connection guards (per-address cap, header and body timeouts), and a graceful close: stop accepting, drain in-flight requests up to a timeout.
 */
import { getRequestListener, type ServerType } from '@hono/node-server';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { GatewaySettings } from '../../core/config/schema.js';
import type { Logger } from '../observability/log.js';
import { createRcpHttpApp, type HttpServerOptions } from '../../core/http/app.js';
import type { BodyReader } from '../../core/http/request-io.js';
import { httpAppSettings } from '../../core/http/app-settings.js';
import type { RcpService } from '../../core/service/contract.js';
import type { SessionOptions } from '../../core/session/session.js';
import { AdmissionGate, InFlightRegistry } from '../../core/session/admission.js';
import { capConnectionsPerAddress, guardedServerOptions, NO_OBSERVER, type ListenerObserver } from './listener-guard.js';
import { nodeRequestIo, responseGone, type BodyReading, type NodeHttpEnv } from './node-request-io.js';
import { INTERNAL_ERROR, toResponse } from '../../core/http/envelope.js';
import { directLane } from './direct-lane.js';

/** Routes mounted beside the RCP endpoint that serve requests too (MCP): they share the in-flight cap and the shutdown registry. */
export type BesideMount = (
  app: Parameters<NonNullable<HttpServerOptions<NodeHttpEnv>['extend']>>[0],
  session: Pick<SessionOptions, 'admit' | 'registry'>,
  /** Reads a request body as the RCP endpoint does: `gateway.bodyTimeoutMs` between reads, undefined past `maxBytes`. */
  readBody: BodyReader<NodeHttpEnv>,
) => void;

export interface RunningHttpServer {
  url: string;
  port: number;
  server: ServerType;
  /** Whether plain JSON RCP posts take the direct lane (direct-lane.ts) rather than the app. */
  directLane: boolean;
  inFlight(): number;
  close(drainTimeoutMs: number): Promise<void>;
}

export async function startHttpServer(
  service: RcpService,
  settings: GatewaySettings,
  logger: Logger,
  extra: Partial<HttpServerOptions<NodeHttpEnv>> = {},
  beside?: BesideMount,
  observer: ListenerObserver = NO_OBSERVER,
): Promise<RunningHttpServer> {
  // Gateway-wide in-flight cap (429 + Retry-After before JSON-RPC) and the sessions shutdown must answer.
  const gate = new AdmissionGate(settings.maxInFlight);
  const registry = new InFlightRegistry();
  const reading: BodyReading = { idleMs: settings.bodyTimeoutMs, observer };
  const io = nodeRequestIo(reading);
  const { app, endpoint, base, maxBodyBytes, endpointOnly } = createRcpHttpApp<NodeHttpEnv>(service, {
    ...httpAppSettings(settings, gate),
    io,
    ...extra,
    extend: (app) => {
      extra.extend?.(app);
      beside?.(app, { admit: () => gate.tryEnter(), registry }, (c, maxBytes) => io.exchange(c, undefined).readBody(maxBytes));
    },
    session: { ...extra.session, registry },
  });
  // A fault while answering, on either route: logged with its stack (the client gets a 500); a
  // client that went away mid-request is not a fault of the gateway.
  const handlerError = (err: unknown, clientGone: boolean): void => {
    const detail = err instanceof Error ? { message: err.message, stack: err.stack } : String(err);
    if (clientGone) logger.debug({ err: detail }, 'client gone before its answer');
    else logger.error({ err: detail }, 'http handler error');
  };
  // Hono's default handler, with the gateway's logger instead of the console.
  app.onError((err, c) => {
    if ('getResponse' in err && typeof err.getResponse === 'function') {
      const res = (err as { getResponse(): Response }).getResponse();
      return c.newResponse(res.body, res);
    }
    handlerError(err, c.env?.outgoing !== undefined && responseGone(c.env.outgoing));
    return toResponse(INTERNAL_ERROR);
  });
  // Plain JSON RCP requests skip the app when nothing but the endpoint would see them (direct-lane.ts).
  const lane =
    settings.directLane && endpointOnly ? directLane({ endpoint, base, maxBodyBytes, reading, onError: handlerError }) : undefined;
  // @hono/node-server's listener, as its serve() would make it; the lane goes first when there is one.
  const toApp = getRequestListener(app.fetch, { hostname: settings.host });
  const listener = lane
    ? (incoming: IncomingMessage, outgoing: ServerResponse): void => {
        if (!lane(incoming, outgoing)) void toApp(incoming, outgoing);
      }
    : toApp;
  const server: ServerType = createServer(guardedServerOptions(settings), listener);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(settings.port, settings.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  capConnectionsPerAddress(server as Server, settings.maxConnectionsPerIp, observer);
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  const url = `http://${host}:${address.port}${settings.basePath}`;
  logger.info({ url }, 'listening');
  return {
    url,
    port: address.port,
    server,
    directLane: lane !== undefined,
    inFlight: () => gate.inFlight,
    close: async (drainTimeoutMs: number) => {
      // Stop accepting: no new connections; requests on kept-alive ones get 429 while draining.
      gate.drain();
      const allClosed = new Promise<void>((resolve) => server.once('close', () => resolve()));
      server.close();
      const closable = server as unknown as { closeIdleConnections?: () => void; closeAllConnections?: () => void };
      closable.closeIdleConnections?.();
      if (!(await gate.idle(drainTimeoutMs))) {
        // Drain timeout: answer what is still running (-32010, §13.1 exactly once), let those answers flush.
        logger.warn({ inFlight: gate.inFlight }, 'drain timeout: answering the remaining requests with -32010');
        registry.failAll();
        await gate.idle(1_000);
      }
      // Answers handed to the sockets get a moment to be written before the rest is cut.
      await Promise.race([allClosed, new Promise<void>((resolve) => setTimeout(resolve, 500).unref())]);
      closable.closeAllConnections?.();
    },
  };
}
