/**
 * One upstream engine: its transport, cached identity + capabilities (§13.2), circuit breaker,
 * concurrency limiter with a bounded queue, and supervision (initialize at start, background
 * retry while down, restart of a stdio child that exits, with capped exponential backoff).
 */
import pLimit, { type LimitFunction } from 'p-limit';
import type { BreakerSettings, EngineConfig, GatewaySettings } from '../config/schema.js';
import { PROTOCOL_VERSION, type Capabilities, type PeerInfo } from '../protocol/capabilities.js';
import { isJsonObject, type JsonObject } from '../protocol/jsonrpc.js';
import type { Logger } from '../../node/observability/log.js';
import type { ResilienceHooks } from '../observability/hooks.js';
import { EngineBreaker, type BreakerState } from '../resilience/breaker.js';
import { UpstreamError } from './errors.js';
import { HttpTransport } from '../../node/upstream/http.js';
import { StdioTransport } from '../../node/upstream/stdio.js';
import type { TransportFactory, UpstreamCallOptions, UpstreamTransport } from './transport.js';

export type EngineStatus = 'starting' | 'ready' | 'down' | 'stopped';

export interface EngineCallOptions {
  signal?: AbortSignal;
  timeoutMs?: number;
  onProgress?: (frame: JsonObject) => void;
  onLog?: (frame: JsonObject) => void;
  headers?: Readonly<Record<string, string>>;
  /**
   * Shape check run on the answer inside the breaker: throw UpstreamError('malformed') so a
   * wrong-shaped answer counts against the engine like any other fault.
   */
  validate?: (result: JsonObject) => void;
}

export interface EngineHooks extends ResilienceHooks {
  onBreakerTransition?: (engineId: string, from: BreakerState, to: BreakerState) => void;
  onStatus?: (engineId: string, status: EngineStatus) => void;
  onLog?: (engineId: string, frame: JsonObject) => void;
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
  private readonly limit: LimitFunction;
  private transport: UpstreamTransport;
  private statusValue: EngineStatus = 'starting';
  private serverInfo: PeerInfo | undefined;
  private caps: Capabilities | undefined;
  private lastErrorText: string | undefined;
  private restartAttempts = 0;
  private restartTimer: ReturnType<typeof setTimeout> | undefined;
  private readyWaiters: Array<() => void> = [];
  private stopping = false;

  constructor(
    readonly config: EngineConfig,
    private readonly settings: GatewaySettings,
    private readonly logger: Logger,
    private readonly hooks: EngineHooks = {},
    /** Builds this engine's transport when given (tests, embedders); else HTTP or stdio by config. */
    private readonly transports?: TransportFactory,
  ) {
    this.id = config.id;
    this.weight = config.weight;
    this.required = config.required;
    this.priority = config.priority;
    this.timeoutMs = config.timeoutMs ?? settings.engineTimeoutMs;
    this.maxQueue = config.maxQueue ?? settings.maxQueuePerEngine;
    this.maxResponseBytes = config.maxResponseBytes ?? settings.maxResponseBytes;
    this.limit = pLimit(config.maxConcurrent ?? settings.maxConcurrentPerEngine);
    const breakerSettings: BreakerSettings = { ...defaultBreaker(settings), ...stripUndefined(config.breaker ?? {}) };
    this.breaker = new EngineBreaker(breakerSettings, {
      onTransition: (from, to, info) => {
        // Every transition is logged; an opening says for how long and how many in a row.
        const fields = { from, to, ...(to === 'open' ? { resetTimeoutMs: info.resetTimeoutMs, openings: info.openings } : {}) };
        if (to === 'open') this.logger.warn(fields, 'circuit breaker transition');
        else this.logger.info(fields, 'circuit breaker transition');
        this.hooks.onBreakerTransition?.(this.id, from, to);
      },
    });
    this.transport = this.createTransport();
  }

  get status(): EngineStatus {
    return this.statusValue;
  }

  get server(): PeerInfo | undefined {
    return this.serverInfo;
  }

  /** Capabilities from the engine's first successful initialize; kept while it is down (§13.2). */
  get capabilities(): Capabilities | undefined {
    return this.caps;
  }

  get lastError(): string | undefined {
    return this.lastErrorText;
  }

  get queueDepth(): number {
    return this.limit.pendingCount;
  }

  get activeCalls(): number {
    return this.limit.activeCount;
  }

  get pid(): number | undefined {
    return this.transport instanceof StdioTransport ? this.transport.pid : undefined;
  }

  has(capability: string): boolean {
    return this.caps !== undefined && capability in this.caps;
  }

  /** Start and initialize. Never throws: a failed engine goes `down` and retries in the background. */
  async start(): Promise<boolean> {
    this.stopping = false;
    try {
      if (this.transport instanceof StdioTransport) await this.transport.start();
      await this.initialize();
      return true;
    } catch (err) {
      this.markDown(err);
      this.scheduleRestart();
      return false;
    }
  }

  /** Resolves when the engine is ready or after `timeoutMs`, whichever comes first. */
  waitReady(timeoutMs: number): Promise<boolean> {
    if (this.statusValue === 'ready') return Promise.resolve(true);
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(this.statusValue === 'ready'), timeoutMs);
      this.readyWaiters.push(() => {
        clearTimeout(timer);
        resolve(true);
      });
    });
  }

  /**
   * One call to this engine through breaker → limiter → transport (timeout + abort).
   * Rejects with UpstreamError; never with anything else.
   */
  call(method: string, params: JsonObject, options: EngineCallOptions = {}): Promise<JsonObject> {
    if (this.statusValue !== 'ready') {
      return Promise.reject(new UpstreamError('not-ready', `engine is ${this.statusValue}${this.lastErrorText ? `: ${this.lastErrorText}` : ''}`));
    }
    if (!this.breaker.admits) return Promise.reject(new UpstreamError('circuit-open', 'circuit breaker is open'));
    if (this.limit.activeCount >= this.limit.concurrency && this.limit.pendingCount >= this.maxQueue) {
      this.hooks.onShed?.(this.id);
      return Promise.reject(new UpstreamError('queue-full', `engine queue is full (${this.maxQueue} waiting)`));
    }
    if (options.signal?.aborted) return Promise.reject(new UpstreamError('aborted', 'aborted before it was sent'));
    // The budget runs from now: time spent waiting in the limiter queue counts against it.
    const budgetMs = Math.max(1, Math.min(options.timeoutMs ?? this.timeoutMs, this.timeoutMs));
    const expiresAt = performance.now() + budgetMs;
    const callOptions: UpstreamCallOptions = {
      signal: options.signal,
      timeoutMs: budgetMs,
      // §9/§17.1: ask for progress (a per-leg token, SSE over HTTP) and logs only from an engine
      // that advertised it can send them.
      onProgress: this.has('streaming') ? options.onProgress : undefined,
      onLog: this.has('log') ? options.onLog : undefined,
      stream: this.has('streaming') && (options.onProgress !== undefined || (options.onLog !== undefined && this.has('log'))),
      headers: options.headers,
      maxResponseBytes: this.maxResponseBytes,
    };
    return this.queued(options.signal, expiresAt, () => this.breaker.fire(async () => {
      const result = await this.transport.call(method, params, { ...callOptions, timeoutMs: Math.max(1, Math.round(expiresAt - performance.now())) });
      options.validate?.(result);
      return result;
    }));
  }

  /**
   * Run `task` in the limiter. A call still waiting for a slot when its caller aborts or its
   * budget runs out is rejected at once (and its slot, when it comes, is released unused), so
   * a queue behind a hanging engine never holds an answer past its deadline.
   */
  private queued<T>(signal: AbortSignal | undefined, expiresAt: number, task: () => Promise<T>): Promise<T> {
    // A free slot now: p-limit claims it at once and starts the task on the next microtask, so
    // there is no wait to bound: no timer, no abort listener (the transport honours both).
    if (this.limit.activeCount < this.limit.concurrency && this.limit.pendingCount === 0) return this.limit(task);
    return new Promise<T>((resolve, reject) => {
      let state: 'waiting' | 'running' | 'gave-up' = 'waiting';
      const giveUp = (err: UpstreamError): void => {
        if (state !== 'waiting') return;
        state = 'gave-up';
        cleanup();
        reject(err);
      };
      const onAbort = (): void => giveUp(new UpstreamError('aborted', 'aborted while queued'));
      const timer = setTimeout(() => giveUp(new UpstreamError('timeout', 'no free slot before the call\'s budget ran out (queued)')),
        Math.max(0, expiresAt - performance.now()));
      const cleanup = (): void => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      void this.limit(() => {
        if (state === 'gave-up') return Promise.resolve();
        state = 'running';
        cleanup();
        return task().then(resolve, reject);
      });
    });
  }

  /** A cheap liveness probe (§7.15). */
  ping(timeoutMs: number): Promise<JsonObject> {
    return this.transport.call('ping', {}, { timeoutMs, maxResponseBytes: 65_536 });
  }

  /** Post a notification to the engine (e.g. notifications/cancel). */
  notify(method: string, params: JsonObject): void {
    this.transport.notify(method, params);
  }

  async stop(): Promise<void> {
    this.stopping = true;
    clearTimeout(this.restartTimer);
    this.setStatus('stopped');
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

  /** §7.13 catalog entry: identity + capabilities; endpoint only when exposed. */
  catalogEntry(expose: boolean): JsonObject {
    const breaker = this.breaker.snapshot();
    const entry: JsonObject = {
      id: this.id,
      server: this.serverInfo ?? { name: this.id },
      capabilities: this.caps ?? {},
      _meta: {
        status: this.statusValue,
        breaker: this.breaker.currentState,
        breakerOpenings: this.breaker.consecutiveOpenings,
        ...(breaker.retryInMs !== undefined ? { breakerRetryInMs: breaker.retryInMs } : {}),
        inFlight: this.limit.activeCount,
        weight: this.weight,
        required: this.required,
        priority: this.priority,
        queueDepth: this.limit.pendingCount,
        ...(this.lastErrorText && this.statusValue !== 'ready' ? { lastError: this.lastErrorText } : {}),
      },
    };
    if (expose || this.config.expose) {
      entry.endpoint = this.config.transport === 'http'
        ? { transport: 'http', url: this.config.url }
        : { transport: 'stdio', command: this.config.command };
    }
    return entry;
  }

  private createTransport(): UpstreamTransport {
    const { config } = this;
    if (this.transports) {
      return this.transports(config, { connections: config.maxConcurrent ?? this.settings.maxConcurrentPerEngine, maxResponseBytes: this.maxResponseBytes }, {
        onStderr: (line) => this.logger.info({ stderr: line }, 'engine stderr'),
        onLog: (frame) => this.hooks.onLog?.(this.id, frame),
        onExit: (code, signal) => {
          if (this.stopping) return;
          this.markDown(new UpstreamError('crashed', `process exited (${signal ?? `code ${code}`})`));
          this.scheduleRestart();
        },
      });
    }
    if (config.transport === 'http') {
      return new HttpTransport({
        url: config.url!,
        connections: config.maxConcurrent ?? this.settings.maxConcurrentPerEngine,
        headers: config.headers,
      });
    }
    const transport = new StdioTransport({
      command: config.command!,
      cwd: config.cwd,
      env: config.env,
      maxLineBytes: this.maxResponseBytes,
      onStderr: (line) => this.logger.info({ stderr: line }, 'engine stderr'),
      // Engine logs tied to no call (§17.1) land in the gateway's own log unless a hook takes them.
      onLog: (frame) => {
        if (this.hooks.onLog) this.hooks.onLog(this.id, frame);
        else this.logger.debug({ engineLevel: String(frame.level ?? 'info'), engineMessage: String(frame.message ?? '').slice(0, 500) }, 'engine log');
      },
    });
    transport.on('exit', (code: number | null, signal: string | null) => {
      if (this.stopping) return;
      this.logger.warn({ code, signal }, 'engine process exited; restarting');
      this.markDown(new UpstreamError('crashed', `process exited (${signal ?? `code ${code}`})`));
      this.scheduleRestart();
    });
    return transport;
  }

  private async initialize(): Promise<void> {
    const result = await this.transport.call('initialize', {
      protocolVersion: PROTOCOL_VERSION,
      client: { name: this.settings.name, version: '0.1.0' },
      capabilities: { streaming: {}, log: {} },
    }, { timeoutMs: this.timeoutMs, maxResponseBytes: this.maxResponseBytes });
    const version = result.protocolVersion;
    if (typeof version !== 'number' || version < 1) throw new UpstreamError('malformed', 'initialize returned no usable protocolVersion');
    const server = isJsonObject(result.server) && typeof result.server.name === 'string'
      ? { name: result.server.name, ...(typeof result.server.version === 'string' ? { version: result.server.version } : {}) }
      : { name: this.id };
    const capabilities: Capabilities = {};
    if (isJsonObject(result.capabilities)) {
      for (const [key, value] of Object.entries(result.capabilities)) {
        if (isJsonObject(value)) capabilities[key] = value;
      }
    }
    this.serverInfo = server;
    // §13.2: the first capability set we learn is kept; a restarted engine does not reshape the gateway.
    this.caps ??= capabilities;
    this.restartAttempts = 0;
    this.lastErrorText = undefined;
    this.setStatus('ready');
    this.logger.info({ server: server.name, capabilities: Object.keys(capabilities) }, 'engine ready');
    for (const waiter of this.readyWaiters.splice(0)) waiter();
  }

  private markDown(err: unknown): void {
    this.lastErrorText = err instanceof Error ? err.message : String(err);
    if (this.statusValue !== 'down') this.logger.warn({ err: this.lastErrorText }, 'engine down');
    this.setStatus('down');
  }

  private scheduleRestart(): void {
    if (this.stopping || this.restartTimer) return;
    // Capped exponential backoff with jitter, so a crash-looping engine costs little and a fleet does not restart in step.
    const delay = Math.min(this.settings.restartMaxDelayMs, this.settings.restartDelayMs * 2 ** Math.min(this.restartAttempts, 20)) * (0.8 + Math.random() * 0.4);
    this.restartAttempts += 1;
    this.restartTimer = setTimeout(() => {
      this.restartTimer = undefined;
      if (this.stopping) return;
      void this.restart();
    }, delay);
    this.restartTimer.unref?.();
  }

  private async restart(): Promise<void> {
    try {
      if (this.transport instanceof StdioTransport && !this.transport.alive) await this.transport.start();
      await this.initialize();
    } catch (err) {
      this.markDown(err);
      if (this.transport instanceof StdioTransport && this.transport.alive) this.transport.kill();
      this.scheduleRestart();
    }
  }

  private setStatus(status: EngineStatus): void {
    if (this.statusValue === status) return;
    this.statusValue = status;
    this.hooks.onStatus?.(this.id, status);
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
