/**
 * One upstream engine as the federation sees it: a client (its call pipeline, pipeline.ts) and
 * a supervisor (supervisor.ts) around a transport the composition root's `TransportFactory`
 * builds. Holds the engine's routing policy (weight, priority, required), its circuit breaker
 * and limiter (for the pipeline and for health, metrics and the catalog).
 */
import type { BreakerSettings, EngineConfig, GatewaySettings } from '../config/schema.js';
import type { Capabilities, PeerInfo } from '../protocol/capabilities.js';
import type { JsonObject } from '../protocol/jsonrpc.js';
import type { ResilienceHooks } from '../observability/hooks.js';
import { EngineBreaker, type BreakerState } from '../resilience/breaker.js';
import { Limiter } from '../resilience/limiter.js';
import type { Call, UpstreamCall } from './call.js';
import type { Logger } from '../observability/logger.js';
import { composePipeline } from './pipeline.js';
import { sendVia } from './send.js';
import { Supervisor, type EngineStatus } from './supervisor.js';
import { replicaSetOf, type ReplicaSetSnapshot } from './replicas.js';
import type { TransportEvents, TransportFactory, UpstreamTransport } from './transport.js';

export type { EngineStatus };

export interface EngineHooks extends ResilienceHooks {
  onBreakerTransition?: (engineId: string, from: BreakerState, to: BreakerState) => void;
  onStatus?: (engineId: string, status: EngineStatus) => void;
  onLog?: (engineId: string, frame: JsonObject) => void;
}

export interface EngineOptions {
  logger: Logger;
  /** Builds the engine's transport (the runtime's choice, made at the composition root). */
  transports: TransportFactory;
  hooks?: EngineHooks;
  /** The gateway's version, presented to engines in `initialize` (§7.1). */
  version?: string;
}

export class Engine {
  readonly id: string;
  readonly weight: number;
  readonly required: boolean;
  readonly priority: number;
  readonly timeoutMs: number;
  readonly maxQueue: number;
  readonly maxResponseBytes: number;
  readonly breaker: EngineBreaker;
  private readonly limiter: Limiter;
  private readonly transport: UpstreamTransport;
  private readonly supervisor: Supervisor;
  private readonly pipeline: Call;
  private readonly logger: Logger;
  private readonly hooks: EngineHooks;

  constructor(
    readonly config: EngineConfig,
    settings: GatewaySettings,
    options: EngineOptions,
  ) {
    this.id = config.id;
    this.weight = config.weight;
    this.required = config.required;
    this.priority = config.priority;
    this.timeoutMs = config.timeoutMs ?? settings.engineTimeoutMs;
    this.maxQueue = config.maxQueue ?? settings.maxQueuePerEngine;
    this.maxResponseBytes = config.maxResponseBytes ?? settings.maxResponseBytes;
    this.logger = options.logger;
    this.hooks = options.hooks ?? {};
    const concurrency = config.maxConcurrent ?? settings.maxConcurrentPerEngine;
    this.limiter = new Limiter(concurrency, this.maxQueue, () => this.hooks.onShed?.(this.id));
    this.breaker = this.createBreaker({ ...defaultBreaker(settings), ...stripUndefined(config.breaker ?? {}) });
    this.transport = options.transports(
      config,
      { connections: concurrency, maxResponseBytes: this.maxResponseBytes, spareSlot: () => this.limiter.trySpare() },
      this.transportEvents(),
    );
    this.supervisor = new Supervisor(this.transport, {
      clientName: settings.name,
      clientVersion: options.version,
      engineId: this.id,
      timeoutMs: this.timeoutMs,
      maxResponseBytes: this.maxResponseBytes,
      restartDelayMs: settings.restartDelayMs,
      restartMaxDelayMs: settings.restartMaxDelayMs,
      logger: this.logger,
      onStatus: (status) => this.hooks.onStatus?.(this.id, status),
    });
    const { supervisor, breaker } = this;
    this.pipeline = composePipeline({
      timeoutMs: this.timeoutMs,
      admission: {
        notReady: () => supervisor.notReady(),
        get breakerAdmits() {
          return breaker.admits;
        },
      },
      limiter: this.limiter,
      breaker,
      send: sendVia({ transport: this.transport, has: (capability) => this.has(capability), maxResponseBytes: this.maxResponseBytes }),
    });
  }

  get status(): EngineStatus {
    return this.supervisor.status;
  }

  get server(): PeerInfo | undefined {
    return this.supervisor.server;
  }

  /** Capabilities from the engine's first successful initialize; kept while it is down (§13.2). */
  get capabilities(): Capabilities | undefined {
    return this.supervisor.capabilities;
  }

  get lastError(): string | undefined {
    return this.supervisor.lastError;
  }

  /** `lastError` as a client may see it: no address, port or path. */
  get lastPublicError(): string | undefined {
    return this.supervisor.lastPublicError;
  }

  /** Whether this engine's endpoint may be shown: the gateway exposes all (`exposeEndpoints`) or the entry its own. */
  endpointShown(exposeEndpoints: boolean): boolean {
    return exposeEndpoints || this.config.expose === true;
  }

  /** The last error as a reader may see it: in full where the endpoint is shown, else without addresses. */
  lastErrorShown(exposeEndpoints: boolean): string | undefined {
    return this.endpointShown(exposeEndpoints) ? this.lastError : this.lastPublicError;
  }

  get queueDepth(): number {
    return this.limiter.waiting;
  }

  get activeCalls(): number {
    return this.limiter.active;
  }

  /** Per-replica state and hedging counts of an engine with `urls` (catalog/list `_meta`, metrics). */
  get replicaSet(): ReplicaSetSnapshot | undefined {
    return replicaSetOf(this.transport);
  }

  get pid(): number | undefined {
    return this.transport.lifecycle?.pid;
  }

  has(capability: string): boolean {
    const caps = this.supervisor.capabilities;
    return caps !== undefined && capability in caps;
  }

  /** Start and initialize. Never throws: a failed engine goes `down` and retries in the background. */
  start(): Promise<boolean> {
    return this.supervisor.start();
  }

  /** Resolves when the engine is ready or after `timeoutMs`, whichever comes first. */
  waitReady(timeoutMs: number): Promise<boolean> {
    return this.supervisor.waitReady(timeoutMs);
  }

  /** One call to this engine through its pipeline (pipeline.ts). Rejects with UpstreamError only. */
  call(call: UpstreamCall): Promise<JsonObject> {
    return this.pipeline(call);
  }

  /** A cheap liveness probe (§7.15), outside the pipeline: it says nothing to the breaker. */
  ping(timeoutMs: number): Promise<JsonObject> {
    return this.transport.call('ping', {}, { timeoutMs, maxResponseBytes: 65_536 });
  }

  /** Post a notification to the engine (e.g. notifications/cancel). */
  notify(method: string, params: JsonObject): void {
    this.transport.notify(method, params);
  }

  async stop(): Promise<void> {
    this.supervisor.stop();
    this.breaker.shutdown();
    await this.transport.close();
  }

  /**
   * Hot reload of an entry whose connection settings did not change: adopt its routing policy
   * (weight, priority, required, expose, writer) while connections, breaker and limiter stay.
   */
  retune(config: EngineConfig): void {
    // The fields are readonly to every other caller; a reload is the one place they change.
    Object.assign(this, { config, weight: config.weight, required: config.required, priority: config.priority });
  }

  private createBreaker(settings: BreakerSettings): EngineBreaker {
    return new EngineBreaker(settings, {
      onTransition: (from, to, info) => {
        // Every transition is logged; an opening says for how long and how many in a row.
        const fields = { from, to, ...(to === 'open' ? { resetTimeoutMs: info.resetTimeoutMs, openings: info.openings } : {}) };
        if (to === 'open') this.logger.warn(fields, 'circuit breaker transition');
        else this.logger.info(fields, 'circuit breaker transition');
        this.hooks.onBreakerTransition?.(this.id, from, to);
      },
    });
  }

  /** What the transport reports outside any call: stderr and untied logs to the log, an exit to the supervisor. */
  private transportEvents(): TransportEvents {
    return {
      onStderr: (line) => this.logger.info({ stderr: line }, 'engine stderr'),
      // Engine logs tied to no call (§17.1) land in the gateway's own log unless a hook takes them.
      onLog: (frame) => {
        if (this.hooks.onLog) this.hooks.onLog(this.id, frame);
        else
          this.logger.debug(
            { engineLevel: String(frame.level ?? 'info'), engineMessage: String(frame.message ?? '').slice(0, 500) },
            'engine log',
          );
      },
      onExit: (code, signal) => this.supervisor.processExited(code, signal),
    };
  }
}

function defaultBreaker(settings: GatewaySettings): BreakerSettings {
  return {
    errorThresholdPercentage: settings.breaker.errorThresholdPercentage ?? 50,
    rollingWindowMs: settings.breaker.rollingWindowMs ?? 10_000,
    rollingBuckets: settings.breaker.rollingBuckets ?? 10,
    volumeThreshold: settings.breaker.volumeThreshold ?? 5,
    resetTimeoutMs: settings.breaker.resetTimeoutMs ?? 5_000,
    maxResetTimeoutMs: settings.breaker.maxResetTimeoutMs ?? 60_000,
  };
}

function stripUndefined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}
