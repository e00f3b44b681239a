/**
 * The gateway on an edge runtime, the same for workerd, Deno and Bun: the core Gateway with the
 * fetch transport for every engine, served by the core's Hono app with the gateway-wide in-flight
 * cap, client authentication, tenant scoping, quotas and the audit line when the config turns
 * them on (core/auth, as on Node; quotas are counted per isolate or process), `/healthz` and
 * `/readyz`, and one JSON request line per request. Engines are initialized by the first request
 * (an isolate has no start-up phase of its own); later requests share that start. `/metrics` is
 * not served: see docs/edge.md.
 */
import type { Hono } from 'hono';
import type { GatewayConfig } from '../core/config/schema.js';
import { Gateway } from '../core/gateway/gateway.js';
import { createHttpApp } from '../core/http/app.js';
import { httpAppSettings } from '../core/http/app-settings.js';
import { mountOpsRoutes, readiness } from '../core/http/health.js';
import { AdmissionGate } from '../core/session/admission.js';
import { AuthRuntime } from '../core/auth/runtime.js';
import { FetchTransport } from '../core/upstream/fetch-transport.js';
import { ReplicaTransport, replicaOptions } from '../core/upstream/replicas.js';
import type { TransportFactory } from '../core/upstream/transport.js';
import type { ConsoleLogger } from './console-logger.js';
import { LoggedService } from './logged-service.js';

/** The package version, written in by the edge build (esbuild `define`) as the Node gateway reads it from package.json. */
declare const RCPGW_VERSION: string | undefined;

export interface EdgeGatewayOptions {
  config: GatewayConfig;
  logger: ConsoleLogger;
  /** Handed every upstream exchange (workerd ties it to the request it runs in). */
  keepAlive?: (settled: Promise<unknown>) => void;
}

/** The client address a runtime saw for a request (per-address quotas, audit), keyed by the request itself. */
const clientAddresses = new WeakMap<Request, string>();

export class EdgeGateway {
  readonly gateway: Gateway;
  private readonly app: Hono;
  private started: Promise<void> | undefined;

  constructor(private readonly options: EdgeGatewayOptions) {
    const { config, logger, keepAlive } = options;
    const settings = config.gateway;
    const transports: TransportFactory = (engine, limits) => {
      // edgeConfig refused every other transport; this only guards a config built elsewhere.
      if (engine.transport !== 'http' || (engine.url === undefined && engine.urls === undefined))
        throw new Error(`engine ${engine.id}: only HTTP engines run at the edge`);
      const fetchTo = (url: string): FetchTransport =>
        new FetchTransport({ url, ...(engine.headers ? { headers: engine.headers } : {}), ...(keepAlive ? { keepAlive } : {}) });
      if (engine.urls) return new ReplicaTransport(engine.urls.map(fetchTo), replicaOptions(engine, limits));
      return fetchTo(engine.url!);
    };
    const version = typeof RCPGW_VERSION === 'undefined' ? undefined : RCPGW_VERSION;
    this.gateway = new Gateway(config, { logger, transports, ...(version !== undefined ? { version } : {}) });
    const logged = new LoggedService(this.gateway, logger, settings.logQueries);
    // The in-process rate store: each isolate (Workers) or process (Deno, Bun) counts its own quotas.
    const auth = new AuthRuntime(settings, { logger, logQueries: () => settings.logQueries });
    const guard = auth.httpGuard((c) => clientAddresses.get(c.req.raw));
    const onFinished = auth.observe(logged.onFinished);
    const gate = new AdmissionGate(settings.maxInFlight);
    this.app = createHttpApp(auth.wrap(logged), {
      ...httpAppSettings(settings, gate),
      ...(guard ? { guard } : {}),
      extend: (app) => mountOpsRoutes(app, { readiness: () => readiness(this.gateway.engines, false) }),
      ...(onFinished ? { session: { onFinished } } : {}),
    });
  }

  /**
   * Initialize the engines, once. A required engine that cannot start does not stop the edge
   * from serving (there is no supervisor to restart it): it is retried in the background like
   * any engine that is down, and requests that need it fail as they would on Node meanwhile.
   */
  start(): Promise<void> {
    this.started ??= this.gateway.start().catch((err: unknown) => {
      this.options.logger.error({ err }, 'a required engine is not ready; serving without it until it is');
    });
    return this.started;
  }

  /** Serve one request; `clientAddress` is the peer the runtime saw (per-address quotas and the audit line). */
  readonly fetch = async (request: Request, clientAddress?: string): Promise<Response> => {
    if (clientAddress !== undefined) clientAddresses.set(request, clientAddress);
    await this.start();
    return this.app.fetch(request);
  };

  stop(): Promise<void> {
    return this.gateway.stop();
  }
}
