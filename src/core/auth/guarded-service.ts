/**
 * The service as a principal sees it: its concurrency cap (each request, batch members included,
 * holds a slot until answered, SSE streams too), its rate limit on transports that cannot refuse
 * before JSON-RPC (stdio: HTTP refuses with 429 in the guard, http-guard.ts), and the audit
 * note. Scoping itself (engines, maxK, cursor key) is applied by the gateway (scoping.ts); the
 * method check and deadline ceiling by the session, before capability gating.
 */
import { ErrorCode, RcpError } from '../protocol/errors.js';
import type { InitializeResult } from '../protocol/capabilities.js';
import type { JsonObject } from '../protocol/jsonrpc.js';
import type { CallContext, RcpService } from '../service/contract.js';
import type { AuditLog } from './audit.js';
import type { QuotaSettings } from './config.js';
import type { Principal } from './principal.js';
import { CONCURRENCY_RETRY_AFTER_MS, ConcurrencyCounter, type RateLimiter } from './quota.js';

export function rateLimited(retryAfterMs: number, detail: string): RcpError {
  return new RcpError(ErrorCode.RateLimited, 'rate limited', { retryable: true, retryAfterMs, detail });
}

export class GuardedService implements RcpService {
  private readonly inFlight = new ConcurrencyCounter();

  constructor(
    private readonly inner: RcpService,
    private readonly limiter: RateLimiter,
    private readonly audit: AuditLog | undefined,
  ) {}

  describe(principal?: Principal): InitializeResult {
    return this.inner.describe(principal);
  }

  get defaultDeadlineMs(): number {
    return this.inner.defaultDeadlineMs;
  }

  call(method: string, params: JsonObject, ctx: CallContext): Promise<JsonObject> {
    this.audit?.noteCall(params, ctx);
    const principal = ctx.principal;
    const quota = principal?.quota;
    // The common path (no principal, or no quota) adds nothing to the call.
    if (!principal || !quota) return this.inner.call(method, params, ctx);
    return this.metered(principal.quotaKey, quota, method, params, ctx);
  }

  private async metered(key: string, quota: QuotaSettings, method: string, params: JsonObject, ctx: CallContext): Promise<JsonObject> {
    if (quota.rate && ctx.transport !== 'http') {
      const decision = await this.limiter.take(key, quota.rate);
      if (!decision.ok) throw rateLimited(decision.retryAfterMs, 'request rate over the quota');
    }
    if (quota.maxConcurrent === undefined) return this.inner.call(method, params, ctx);
    const release = this.inFlight.tryEnter(key, quota.maxConcurrent);
    if (!release) throw rateLimited(CONCURRENCY_RETRY_AFTER_MS, `more than ${quota.maxConcurrent} requests in flight`);
    try {
      return await this.inner.call(method, params, ctx);
    } finally {
      release();
    }
  }
}
