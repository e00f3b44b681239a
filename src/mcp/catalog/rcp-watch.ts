/**
 * The catalog changes the MCP side announces, offered to RCP clients (dashboards) as the vendor
 * method `x-rcpgw/catalog/watch` (§6.2: extension methods are gated by a matching `x-` key, here
 * `x-rcpgw: { catalogWatch: {} }`). The call is an ordinary RCP request whose events travel as
 * §9 progress frames — over HTTP on the request's SSE stream (`Accept: text/event-stream` and a
 * `_meta.progressToken`), over stdio as NDJSON frames:
 *
 *   first frame   { stage: "catalog", message: "watching 3 engines", partial: { revision: 0, engines: [{id, status, breaker}] } }
 *   each change   { stage: "catalog", message: "engine a: breaker closed → open", partial: { revision, events: [...], engines: [...] } }
 *   final answer  { ended: "shutdown" | "deadline" | "cancel" | "disconnect", revision }
 *
 * It lasts one request deadline (`gateway.deadlineMs`, shortened by `_meta.deadlineMs`) and then
 * answers `ended: "deadline"`; the client re-issues it and gets the full state again in its first
 * frame, so nothing is missed across the gap. At shutdown every open watch answers
 * `ended: "shutdown"` at once, so its stream ends cleanly instead of holding the drain.
 * Composed at the root around the gateway's service, so the core keeps no MCP or watch state.
 */
import { ErrorCode, RcpError } from '../../core/protocol/errors.js';
import type { InitializeResult } from '../../core/protocol/capabilities.js';
import type { Principal } from '../../core/auth/principal.js';
import type { JsonObject } from '../../core/protocol/jsonrpc.js';
import { abortReasonOf, type CallContext, type RcpService } from '../../core/service/contract.js';
import type { CatalogEvent, CatalogSnapshot } from './snapshot.js';
import type { CatalogWatch } from './watch.js';

export const WATCH_METHOD = 'x-rcpgw/catalog/watch';
const VENDOR_KEY = 'x-rcpgw';

export class CatalogWatchService implements RcpService {
  private readonly open = new Set<(reason: string) => void>();
  private closed = false;
  private readonly described = new WeakMap<InitializeResult, InitializeResult>();

  constructor(
    private readonly inner: RcpService,
    private readonly watch: CatalogWatch,
  ) {}

  get defaultDeadlineMs(): number {
    return this.inner.defaultDeadlineMs;
  }

  describe(principal?: Principal): InitializeResult {
    const inner = this.inner.describe(principal);
    // describe() is on every request's path: each set the gateway gives (the full one, each engine
    // scope's) is extended once.
    let outer = this.described.get(inner);
    if (!outer) {
      const vendor = inner.capabilities[VENDOR_KEY] ?? {};
      outer = { ...inner, capabilities: { ...inner.capabilities, [VENDOR_KEY]: { ...vendor, catalogWatch: {} } } };
      this.described.set(inner, outer);
    }
    return outer;
  }

  call(method: string, params: JsonObject, ctx: CallContext): Promise<JsonObject> {
    return method === WATCH_METHOD ? this.serveWatch(ctx) : this.inner.call(method, params, ctx);
  }

  /** End every open watch with its final answer (graceful shutdown); refuse new ones. */
  close(): void {
    this.closed = true;
    for (const end of [...this.open]) end('shutdown');
  }

  private serveWatch(ctx: CallContext): Promise<JsonObject> {
    const progress = ctx.progress;
    if (!progress) {
      return Promise.reject(
        RcpError.invalidParams(
          '_meta.progressToken',
          'the watch sends its events as progress frames (§9): pass a progressToken (and over HTTP accept text/event-stream)',
        ),
      );
    }
    if (this.closed) return Promise.reject(new RcpError(ErrorCode.BackendUnavailable, 'server is shutting down', { retryable: true }));
    let revision = 0;
    const initial = this.watch.current;
    progress({
      stage: 'catalog',
      message: `watching ${initial.engines.length} engine${initial.engines.length === 1 ? '' : 's'}`,
      partial: { revision, engines: states(initial) },
    });
    return new Promise<JsonObject>((resolve) => {
      const unsubscribe = this.watch.subscribe((events, snapshot) => {
        revision++;
        progress({
          stage: 'catalog',
          message: events.map(describeEvent).join('; '),
          partial: { revision, events: events.map((e) => ({ ...e })), engines: states(snapshot) },
        });
      });
      const onAbort = (): void => end(abortReasonOf(ctx.signal) ?? 'cancel');
      const end = (reason: string): void => {
        unsubscribe();
        ctx.signal.removeEventListener('abort', onAbort);
        this.open.delete(end);
        resolve({ ended: reason, revision });
      };
      this.open.add(end);
      if (ctx.signal.aborted) onAbort();
      else ctx.signal.addEventListener('abort', onAbort, { once: true });
    });
  }
}

function states(snapshot: CatalogSnapshot): JsonObject[] {
  return snapshot.engines.map((engine) => ({ id: engine.id, status: engine.status, breaker: engine.breaker }));
}

function describeEvent(event: CatalogEvent): string {
  switch (event.kind) {
    case 'engine-added':
      return `engine ${event.engine} added (${event.status})`;
    case 'engine-removed':
      return `engine ${event.engine} removed`;
    case 'engine-status':
      return `engine ${event.engine}: ${event.from} → ${event.to}`;
    case 'engine-breaker':
      return `engine ${event.engine}: breaker ${event.from} → ${event.to}`;
    case 'capabilities-changed':
      return 'capabilities changed';
  }
}
