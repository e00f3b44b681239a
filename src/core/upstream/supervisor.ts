/**
 * Supervision of one engine: start its transport (spawn a child, for a transport that owns a
 * process), initialize it, and keep it that way. A failed start or initialize, or a process
 * that exits, marks the engine `down` and schedules a restart in the background with capped
 * exponential backoff and jitter; the first successful initialize makes it `ready`.
 */
import type { Capabilities, PeerInfo } from '../protocol/capabilities.js';
import { RcpError } from '../protocol/errors.js';
import { UpstreamError, publicDetail } from './errors.js';
import { handshake, type HandshakeOptions } from './handshake.js';
import type { Logger } from '../observability/logger.js';
import type { UpstreamTransport } from './transport.js';

export type EngineStatus = 'starting' | 'ready' | 'down' | 'stopped';

export interface SupervisorOptions extends HandshakeOptions {
  /** First restart delay; doubled per failed attempt up to `restartMaxDelayMs`. */
  restartDelayMs: number;
  restartMaxDelayMs: number;
  logger: Logger;
  onStatus?: (status: EngineStatus) => void;
}

export class Supervisor {
  private statusValue: EngineStatus = 'starting';
  private serverInfo: PeerInfo | undefined;
  private caps: Capabilities | undefined;
  /** Why the engine last went down; undefined once ready. */
  private lastFailure: unknown;
  private restartAttempts = 0;
  private restartTimer: ReturnType<typeof setTimeout> | undefined;
  private readyWaiters: Array<() => void> = [];
  private stopping = false;

  constructor(
    private readonly transport: UpstreamTransport,
    private readonly options: SupervisorOptions,
  ) {}

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

  /** Why the engine last went down, as the platform worded it (addresses included): for the log and operators. */
  get lastError(): string | undefined {
    const err = this.lastFailure;
    return err === undefined ? undefined : err instanceof Error ? err.message : String(err);
  }

  /** The same, as a client may be told it (catalog/list): no address, port or path (upstream/errors.ts). */
  get lastPublicError(): string | undefined {
    const err = this.lastFailure;
    if (err === undefined) return undefined;
    if (err instanceof UpstreamError) return publicDetail(err);
    return err instanceof RcpError ? err.message.slice(0, 300) : 'the engine failed to start';
  }

  /** Why the engine cannot take calls now, or undefined when it is ready. */
  notReady(): UpstreamError | undefined {
    if (this.statusValue === 'ready') return undefined;
    return new UpstreamError('not-ready', `engine is ${this.statusValue}${this.lastError ? `: ${this.lastError}` : ''}`);
  }

  /** Start and initialize. Never throws: a failed engine goes `down` and retries in the background. */
  async start(): Promise<boolean> {
    this.stopping = false;
    try {
      await this.transport.lifecycle?.start();
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

  /** The engine's process exited (TransportEvents.onExit): down, and restarted unless stopping. */
  processExited(code: number | null, signal: string | null): void {
    if (this.stopping) return;
    this.options.logger.warn({ code, signal }, 'engine process exited; restarting');
    this.markDown(new UpstreamError('crashed', `process exited (${signal ?? `code ${code}`})`));
    this.scheduleRestart();
  }

  /** No more restarts; the engine is `stopped` (its owner closes the transport). */
  stop(): void {
    this.stopping = true;
    clearTimeout(this.restartTimer);
    this.setStatus('stopped');
  }

  private async initialize(): Promise<void> {
    const { server, capabilities, via } = await handshake(this.transport, this.options);
    if (via === 'info') {
      this.options.logger.info(
        { server: server.name },
        'engine refused initialize with -32600 (its session is already initialized, e.g. by another gateway process); capabilities read with info (§7.2)',
      );
    }
    this.serverInfo = server;
    // §13.2: the first capability set we learn is kept; a restarted engine does not reshape the gateway.
    this.caps ??= capabilities;
    this.restartAttempts = 0;
    this.lastFailure = undefined;
    this.setStatus('ready');
    this.options.logger.info({ server: server.name, capabilities: Object.keys(capabilities) }, 'engine ready');
    for (const waiter of this.readyWaiters.splice(0)) waiter();
  }

  private markDown(err: unknown): void {
    this.lastFailure = err;
    if (this.statusValue !== 'down') this.options.logger.warn({ err: this.lastError }, 'engine down');
    this.setStatus('down');
  }

  private scheduleRestart(): void {
    if (this.stopping || this.restartTimer) return;
    // Capped exponential backoff with jitter, so a crash-looping engine costs little and a fleet does not restart in step.
    const { restartDelayMs, restartMaxDelayMs } = this.options;
    const delay = Math.min(restartMaxDelayMs, restartDelayMs * 2 ** Math.min(this.restartAttempts, 20)) * (0.8 + Math.random() * 0.4);
    this.restartAttempts += 1;
    this.restartTimer = setTimeout(() => {
      this.restartTimer = undefined;
      if (this.stopping) return;
      void this.restart();
    }, delay);
    this.restartTimer.unref?.();
  }

  private async restart(): Promise<void> {
    const lifecycle = this.transport.lifecycle;
    try {
      if (lifecycle && !lifecycle.alive) await lifecycle.start();
      await this.initialize();
    } catch (err) {
      this.markDown(err);
      if (lifecycle?.alive) lifecycle.kill();
      this.scheduleRestart();
    }
  }

  private setStatus(status: EngineStatus): void {
    if (this.statusValue === status) return;
    this.statusValue = status;
    this.options.onStatus?.(status);
  }
}
