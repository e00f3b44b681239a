/**
 * Operations wiring for one gateway process: metrics registry, the observed service wrapper and
 * its hooks, health/metrics routes (main port or gateway.metrics.port), SIGHUP and file-watch
 * reload. src/cli/main.ts creates one, passes `hooks` to the Gateway, serves `attach(gateway)`.
 */
import type { GatewayConfig } from '../core/config/schema.js';
import type { EngineHooks } from '../core/upstream/engine.js';
import type { FederationHooks } from '../core/federation/context.js';
import type { Gateway } from '../core/gateway/gateway.js';
import type { HttpServerOptions } from '../core/http/app.js';
import type { RcpService } from '../core/service/contract.js';
import type { SessionOptions } from '../core/session/session.js';
import { mountOpsRoutes, readiness, type OpsRoutes } from '../core/http/health.js';
import type { Logger } from './observability/log.js';
import { GatewayMetrics } from './observability/metrics.js';
import { ObservedService } from './observability/observed-service.js';
import { startOpsServer, type RunningOpsServer } from './server/ops-server.js';
import type { NodeHttpEnv } from './server/node-request-io.js';
import { ConfigReloader } from './config/reloader.js';
import { ClusterMetricsExposition } from './observability/cluster-metrics.js';
import { isGatewayWorker } from './server/cluster.js';
import { mountConsole } from './console/console.js';

export class Operations {
  readonly metrics: GatewayMetrics;
  /** What `/metrics` serves: this process's registry, or in a `--workers` worker every worker's merged. */
  private readonly exposition: GatewayMetrics | ClusterMetricsExposition;
  private settings: GatewayConfig['gateway'];
  private gateway: Gateway | undefined;
  private service: ObservedService | undefined;
  private draining = false;
  private opsServer: RunningOpsServer | undefined;
  private reloader: ConfigReloader | undefined;
  private readonly signalHandlers: Array<[NodeJS.Signals, () => void]> = [];
  private hookSet: (FederationHooks & EngineHooks) | undefined;
  private readonly reloadListeners: Array<() => void> = [];

  constructor(
    config: GatewayConfig,
    private readonly logger: Logger,
  ) {
    this.settings = config.gateway;
    this.metrics = new GatewayMetrics({ processMetrics: config.gateway.metrics.enabled });
    this.exposition = isGatewayWorker() ? new ClusterMetricsExposition(this.metrics.registry) : this.metrics;
  }

  /** Hooks for `new Gateway(config, { hooks })`; they report to this process's metrics and logs. */
  get hooks(): FederationHooks & EngineHooks {
    this.hookSet ??= this.observed().hooks();
    return this.hookSet;
  }

  /** The service the transports serve: the gateway wrapped in observation. */
  attach(gateway: Gateway): RcpService {
    this.gateway = gateway;
    this.metrics.watchEngines(() => gateway.engines);
    return this.observed();
  }

  /** Extra HTTP server options: ops routes, SSE stream gauge, the per-request observer. */
  httpOptions(): Partial<HttpServerOptions<NodeHttpEnv>> {
    const onMain = this.settings.metrics.enabled && this.settings.metrics.port === undefined;
    return {
      extend: (app) => {
        mountOpsRoutes(app, this.routes(onMain));
        // Operator console: loopback clients only; an admin auth guard goes as mountConsole's last argument.
        if (this.settings.console.enabled)
          mountConsole(
            app,
            this.metrics,
            () => this.requireGateway(),
            () => this.observed(),
          );
      },
      onStreamOpen: () => this.metrics.streamOpened(),
      onStreamClose: () => this.metrics.streamClosed(),
      session: this.sessionOptions(),
    };
  }

  sessionOptions(): Partial<SessionOptions> {
    return { onFinished: this.observed().onFinished };
  }

  /** Start what runs beside the listener: the metrics port, SIGHUP and file-watch reload. */
  async startSidecars(configFile: string | undefined, adjust?: (next: GatewayConfig) => void): Promise<void> {
    const { metrics } = this.settings;
    if (metrics.enabled && metrics.port !== undefined) {
      this.opsServer = await startOpsServer(this.settings.host, metrics.port, this.routes(true));
      this.logger.info({ url: `${this.opsServer.url}/metrics` }, 'metrics listening');
      process.stderr.write(`rcp-gateway metrics on ${this.opsServer.url}/metrics\n`);
    }
    if (configFile && this.gateway) {
      this.reloader = new ConfigReloader({
        file: configFile,
        gateway: this.gateway,
        logger: this.logger,
        metrics: this.metrics,
        ...(adjust ? { adjust } : {}),
        onApplied: (config) => {
          this.logger.level = config.gateway.logLevel;
          for (const listener of this.reloadListeners) listener();
        },
      });
      const onHup = (): void => {
        this.logger.info({ file: configFile }, 'SIGHUP: reloading config');
        void this.reloader?.reload('SIGHUP');
      };
      process.on('SIGHUP', onHup);
      this.signalHandlers.push(['SIGHUP', onHup]);
      if (this.settings.watchConfig) this.reloader.watch();
    }
  }

  /** Call `listener` after each config reload that was applied (the engine set may have changed). */
  onReload(listener: () => void): void {
    this.reloadListeners.push(listener);
  }

  /** Readiness turns false from here on (the listener is draining for shutdown). */
  markDraining(): void {
    this.draining = true;
  }

  async close(): Promise<void> {
    this.service?.flushLines();
    for (const [signal, handler] of this.signalHandlers.splice(0)) process.off(signal, handler);
    this.reloader?.close();
    if (this.exposition instanceof ClusterMetricsExposition) this.exposition.close();
    await this.opsServer?.close();
    await this.metrics.experiments.close();
  }

  private routes(withMetrics: boolean): OpsRoutes {
    return {
      readiness: () => readiness(this.gateway?.engines ?? [], this.draining),
      ...(withMetrics ? { metrics: this.exposition } : {}),
    };
  }

  private observed(): ObservedService {
    if (!this.service) {
      // Hooks are needed before the gateway exists (its constructor takes them); calls come after attach().
      const gatewayOf = (): Gateway => this.requireGateway();
      const inner: RcpService = {
        describe: (principal) => gatewayOf().describe(principal),
        call: (method, params, ctx) => gatewayOf().call(method, params, ctx),
        get defaultDeadlineMs() {
          return gatewayOf().defaultDeadlineMs;
        },
      };
      this.service = new ObservedService(inner, {
        metrics: this.metrics,
        logger: this.logger,
        logQueries: () => this.gateway?.settings.logQueries ?? false,
      });
    }
    return this.service;
  }

  private requireGateway(): Gateway {
    if (!this.gateway) throw new Error('operations: no gateway attached');
    return this.gateway;
  }
}
