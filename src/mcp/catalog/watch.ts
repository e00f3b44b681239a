/**
 * Watches the engine catalog for changes: engines added or removed by a hot reload, an engine
 * going down or up, its breaker opening or closing, the gateway's capability set changing.
 * Nothing here polls: whoever sees something happen (the engine status and breaker hooks, the
 * config reloader) calls `poke()`, and the watch re-reads the catalog and tells its listeners
 * what differs from the last snapshot. Pokes arriving while a re-read runs coalesce into one
 * more re-read, so a burst of hooks yields one diff and no event is lost or repeated.
 */
import { EMPTY_CATALOG, diffCatalog, type CatalogEvent, type CatalogSnapshot } from './snapshot.js';

export type CatalogListener = (events: readonly CatalogEvent[], snapshot: CatalogSnapshot) => void;

export class CatalogWatch {
  private snapshot: CatalogSnapshot = EMPTY_CATALOG;
  private started = false;
  private closed = false;
  private refreshing: Promise<void> | undefined;
  private again = false;
  private readonly listeners = new Set<CatalogListener>();

  constructor(
    private readonly read: () => Promise<CatalogSnapshot>,
    private readonly onError: (err: unknown) => void = () => undefined,
  ) {}

  /** The catalog as last read. */
  get current(): CatalogSnapshot {
    return this.snapshot;
  }

  /** Take the first snapshot; changes are reported relative to it from here on. */
  async start(): Promise<void> {
    this.snapshot = await this.read();
    this.started = true;
  }

  /** Listen for changes; returns the unsubscribe function. */
  subscribe(listener: CatalogListener): () => void {
    this.listeners.add(listener);
    return () => {
      this.listeners.delete(listener);
    };
  }

  /** Something may have changed: re-read the catalog and report the difference. */
  poke(): void {
    if (!this.started || this.closed) return;
    if (this.refreshing) {
      this.again = true;
      return;
    }
    this.refreshing = this.refresh()
      .catch(this.onError)
      .finally(() => {
        this.refreshing = undefined;
      });
  }

  /** Resolves once no re-read is running or queued. */
  async settled(): Promise<void> {
    while (this.refreshing) await this.refreshing;
  }

  close(): void {
    this.closed = true;
    this.listeners.clear();
  }

  private async refresh(): Promise<void> {
    do {
      this.again = false;
      const next = await this.read();
      if (this.closed) return;
      const events = diffCatalog(this.snapshot, next);
      this.snapshot = next;
      if (events.length === 0) continue;
      for (const listener of [...this.listeners]) {
        try {
          listener(events, next);
        } catch (err) {
          this.onError(err);
        }
      }
    } while (this.again && !this.closed);
  }
}
