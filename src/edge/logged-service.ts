/**
 * The gateway as the edge serves it: at the end of each request (session `onFinished`) the one
 * info line, built by the core's request-log from the answer and the request's context (its trace
 * id is the one the session resolved, which the engines and the answer's `_meta` carry too) — the
 * same line the Node gateway writes. The edge has no metrics registry (docs/edge.md): these lines are what
 * a log pipeline counts.
 */
import type { Principal } from '../core/auth/principal.js';
import type { InitializeResult } from '../core/protocol/capabilities.js';
import type { JsonObject } from '../core/protocol/jsonrpc.js';
import type { CallContext, RcpService } from '../core/service/contract.js';
import type { FinishedInfo } from '../core/session/session.js';
import { queryText, requestLine } from '../core/observability/request-log.js';
import type { ConsoleLogger } from './console-logger.js';

export class LoggedService implements RcpService {
  /** The query text per request, kept only when `logQueries` is on; keyed by the session's CallContext, which comes back in FinishedInfo.ctx. */
  private readonly queries = new WeakMap<CallContext, string>();

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
    if (this.logQueries) {
      const query = queryText(params);
      if (query !== undefined) this.queries.set(ctx, query);
    }
    return this.inner.call(method, params, ctx);
  }

  readonly onFinished = (info: FinishedInfo): void => {
    if (!this.logger.isLevelEnabled('info')) return;
    const query = info.ctx ? this.queries.get(info.ctx) : undefined;
    const line = requestLine(info, { logQueries: this.logQueries, ...(query !== undefined ? { query } : {}) });
    this.logger.info({ ...line }, 'request');
  };
}
