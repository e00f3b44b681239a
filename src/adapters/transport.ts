/**
 * An adapter as a gateway engine in this process (`"transport": "adapter"`): no child process,
 * the adapter's RCP service behind the core's in-memory transport, so every call still crosses
 * a Session as JSON (lifecycle, ids, cancel, size bound) exactly as over stdio. Opening the
 * database is the engine's start: when it fails the supervisor marks the engine down and retries
 * with its backoff; once open, a database outage shows as -32010 answers (breaker, retries) and
 * the driver reconnects on its own.
 */
import type { EngineConfig } from '../core/config/schema.js';
import type { JsonObject } from '../core/protocol/jsonrpc.js';
import { InMemoryTransport } from '../core/upstream/in-memory.js';
import { UpstreamError } from '../core/upstream/errors.js';
import type { TransportLifecycle, UpstreamCallOptions, UpstreamTransport } from '../core/upstream/transport.js';
import { adapterOf } from './engine-config.js';
import { openAdapter, type OpenedAdapter } from './open.js';

export class AdapterTransport implements UpstreamTransport, TransportLifecycle {
  /** Stateful like a stdio connection (initialize first, one session). */
  readonly kind = 'stdio' as const;
  readonly lifecycle: TransportLifecycle = this;
  readonly pid = undefined;
  private opened: { adapter: OpenedAdapter; wire: InMemoryTransport } | undefined;
  private opening: Promise<void> | undefined;

  constructor(private readonly config: EngineConfig) {}

  get alive(): boolean {
    return this.opened !== undefined;
  }

  start(): Promise<void> {
    this.opening ??= openAdapter(adapterOf(this.config), this.config.cwd ?? process.cwd())
      .then((adapter) => {
        this.opened = { adapter, wire: new InMemoryTransport(adapter.service, { kind: 'stdio' }) };
      })
      .finally(() => {
        this.opening = undefined;
      });
    return this.opening;
  }

  /** Close the database; the supervisor's next start opens it anew. */
  kill(): void {
    void this.release();
  }

  call(method: string, params: JsonObject, options: UpstreamCallOptions): Promise<JsonObject> {
    if (!this.opened) return Promise.reject(new UpstreamError('transport', "the adapter's database is not open"));
    return this.opened.wire.call(method, params, options);
  }

  notify(method: string, params: JsonObject): void {
    this.opened?.wire.notify(method, params);
  }

  close(): Promise<void> {
    return this.release();
  }

  private async release(): Promise<void> {
    const opened = this.opened;
    this.opened = undefined;
    if (!opened) return;
    await opened.wire.close();
    await opened.adapter.close();
  }
}
