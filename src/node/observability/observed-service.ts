/**
 * The gateway as the transports see it, with observation around each call: in-flight requests
 * and relayed progress frames are counted; when debug logging is on, the request's id and trace
 * id ride along (AsyncLocalStorage) so per-leg debug lines can name them; at the end (session
 * `onFinished`) it counts metrics and queues the request line (written a turn at a time,
 * request-line-writer.ts). The trace itself is resolved once by the
 * session (`CallContext.trace`), so the engines, the answer's `_meta` and the line carry one id.
 *
 * A plain call (no progress asked for, no debug logging) passes the session's context through
 * unchanged: nothing is allocated per request but the in-flight bookkeeping.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { InitializeResult } from '../../core/protocol/capabilities.js';
import type { Principal } from '../../core/auth/principal.js';
import type { JsonObject, RequestId } from '../../core/protocol/jsonrpc.js';
import type { CallContext, ProgressUpdate, RcpService } from '../../core/service/contract.js';
import type { FinishedInfo } from '../../core/session/session.js';
import type { EngineHooks } from '../../core/upstream/engine.js';
import type { FederationHooks } from '../../core/federation/context.js';
import type { Logger } from './log.js';
import type { GatewayMetrics } from './metrics.js';
import { degradedOf, queryText, requestLine } from '../../core/observability/request-log.js';
import { RequestLineWriter } from './request-line-writer.js';

interface LegContext {
  id: RequestId;
  traceId: string;
}

export interface ObservedServiceOptions {
  metrics: GatewayMetrics;
  logger: Logger;
  /** Read per request, so a reload can switch it. */
  logQueries: () => boolean;
}

export class ObservedService implements RcpService {
  /** The query text per request, kept only when `logQueries` is on; keyed by the session's CallContext, which comes back in FinishedInfo.ctx. */
  private readonly queries = new WeakMap<CallContext, string>();
  private readonly legContext = new AsyncLocalStorage<LegContext>();
  private readonly lines: RequestLineWriter;

  constructor(
    private readonly inner: RcpService,
    private readonly options: ObservedServiceOptions,
  ) {
    this.lines = new RequestLineWriter(options.logger);
  }

  describe(principal?: Principal): InitializeResult {
    return this.inner.describe(principal);
  }

  get defaultDeadlineMs(): number {
    return this.inner.defaultDeadlineMs;
  }

  call(method: string, params: JsonObject, ctx: CallContext): Promise<JsonObject> {
    const { metrics } = this.options;
    if (this.options.logQueries()) {
      const query = queryText(params);
      if (query !== undefined) this.queries.set(ctx, query);
    }
    const progress = ctx.progress;
    const inner: CallContext = progress
      ? {
          ...ctx,
          progress: (update: ProgressUpdate): void => {
            metrics.progressFrame();
            progress(update);
          },
        }
      : ctx;
    metrics.requestStarted();
    let answer: Promise<JsonObject>;
    try {
      // Only pay for async context propagation when someone reads the per-leg lines.
      answer = this.options.logger.isLevelEnabled('debug')
        ? this.legContext.run({ id: ctx.requestId, traceId: ctx.trace.traceId }, () => this.inner.call(method, params, inner))
        : this.inner.call(method, params, inner);
    } catch (err) {
      // A service that throws instead of rejecting is answered the same way, and counted out.
      answer = Promise.reject(err);
    }
    answer.then(this.ended, this.ended);
    return answer;
  }

  private readonly ended = (): void => this.options.metrics.requestEnded();

  /** Session `onFinished`: metrics for every request, the info request line. */
  readonly onFinished = (info: FinishedInfo): void => {
    const { metrics, logger } = this.options;
    metrics.requestFinished(info.method, info.code, info.durationMs, info.abortReason);
    const result = 'result' in info.response ? info.response.result : undefined;
    const degraded = degradedOf(result);
    if (degraded.length > 0) metrics.degradedAnswer(info.method, degraded);
    if (!logger.isLevelEnabled('info')) return;
    const query = info.ctx ? this.queries.get(info.ctx) : undefined;
    const logQueries = this.options.logQueries();
    // A literal with `query` added only when kept (a spread of an optional key allocates twice).
    const extra: { query?: string; logQueries: boolean; degraded: typeof degraded } = { logQueries, degraded };
    if (query !== undefined) extra.query = query;
    this.lines.add(() => requestLine(info, extra));
  };

  /** Write the request lines still queued for this turn (shutdown: before the logger's own flush). */
  flushLines(): void {
    this.lines.flush();
  }

  /** Hooks for the federation and the engines: metrics, and per-leg debug lines. */
  hooks(): FederationHooks & EngineHooks {
    const { metrics, logger } = this.options;
    return {
      onLeg: (engine, method, code, durationMs) => {
        metrics.engineCall(engine, code, durationMs);
        if (logger.isLevelEnabled('debug')) {
          const context = this.legContext.getStore();
          logger.debug({ engine, method, code, latencyMs: Math.round(durationMs * 10) / 10, ...(context ?? {}) }, 'leg');
        }
      },
      onFanout: (method, width) => metrics.fanout(method, width),
      onBreakerTransition: (engine, from, to) => metrics.breakerTransition(engine, from, to),
      onShed: (engine) => metrics.shed(engine),
      onRetry: (engine) => metrics.retry(engine),
      onRetryBudgetExhausted: (engine) => metrics.retryBudgetExhausted(engine),
      ...metrics.experiments.hooks(),
    };
  }
}
