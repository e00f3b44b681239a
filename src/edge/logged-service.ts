/**
 * The gateway as the edge serves it: the trace id resolved once per request (W3C `traceparent`,
 * else `_meta.traceId`, else generated) and handed down in `_meta.traceId`, so the engines, the
 * answer's `_meta` and the request line carry the same one; and at the end (session
 * `onFinished`) the one info line per request, built by the core's request-log — the same line
 * the Node gateway writes. The edge has no metrics registry (docs/edge.md): these lines are what
 * a log pipeline counts.
 */
import type { Principal } from '../core/auth/principal.js';
import type { InitializeResult } from '../core/protocol/capabilities.js';
import type { JsonObject } from '../core/protocol/jsonrpc.js';
import type { CallContext, RcpService } from '../core/service/contract.js';
import type { FinishedInfo } from '../core/session/session.js';
import { traceContext } from '../core/federation/trace.js';
import { queryText, requestLine } from '../core/observability/request-log.js';
import type { ConsoleLogger } from './console-logger.js';

interface RequestRecord {
  traceId: string;
  query?: string;
}

export class LoggedService implements RcpService {
  /** Keyed by the session's CallContext, which comes back in FinishedInfo.ctx. */
  private readonly records = new WeakMap<CallContext, RequestRecord>();

  constructor(
    private readonly inner: RcpService,
    private readonly logger: ConsoleLogger,
    private readonly logQueries: boolean,
  ) {}

  describe(principal?: Principal): InitializeResult {
    return this.inner.describe(principal);
  }

  get defaultDeadlineMs(): number {
    return this.inner.defaultDeadlineMs;
  }

  call(method: string, params: JsonObject, ctx: CallContext): Promise<JsonObject> {
    const traceId = traceContext(ctx.headers, ctx.meta.traceId).traceId;
    const query = this.logQueries ? queryText(params) : undefined;
    this.records.set(ctx, { traceId, ...(query !== undefined ? { query } : {}) });
    // The header still wins downstream (traceContext), and it names this same id.
    return this.inner.call(method, params, { ...ctx, meta: { ...ctx.meta, traceId } });
  }

  readonly onFinished = (info: FinishedInfo): void => {
    if (!this.logger.isLevelEnabled('info')) return;
    const record = info.ctx ? this.records.get(info.ctx) : undefined;
    const line = requestLine(info, {
      logQueries: this.logQueries,
      ...(record?.traceId ? { traceId: record.traceId } : {}),
      ...(record?.query !== undefined ? { query: record.query } : {}),
    });
    this.logger.info({ ...line }, 'request');
  };
}
