/**
 * Auth and quotas assembled from the config, for a runtime to plug in: the HTTP guard, the
 * service wrapper (quotas in flight, audit notes), the session observer (audit lines) and the
 * stdio principal. A runtime passes its own rate store (Redis under Node) and client address.
 */
import type { Context, Env, Hono } from 'hono';
import type { GatewaySettings } from '../config/schema.js';
import type { Logger } from '../observability/logger.js';
import type { RcpService } from '../service/contract.js';
import type { FinishedInfo } from '../session/session.js';
import { AuditLog } from './audit.js';
import { Authenticator } from './authenticator.js';
import { GuardedService } from './guarded-service.js';
import { installHttpGuard } from './http-guard.js';
import type { Principal } from './principal.js';
import { TokenBucketLimiter, type RateLimiter } from './quota.js';
import { principalFor } from './tenants.js';

export interface AuthRuntimeOptions {
  logger: Logger;
  /** The shared rate store; the in-process token bucket when absent. */
  limiter?: RateLimiter;
  /** Read per request, so a reload can switch it. */
  logQueries: () => boolean;
}

export class AuthRuntime {
  readonly limiter: RateLimiter;
  readonly audit: AuditLog | undefined;
  private readonly authenticator: Authenticator | undefined;

  constructor(
    private readonly settings: GatewaySettings,
    options: AuthRuntimeOptions,
  ) {
    const { auth } = settings;
    this.limiter = options.limiter ?? new TokenBucketLimiter();
    this.audit = (auth.audit ?? auth.enabled) ? new AuditLog(options.logger, options.logQueries) : undefined;
    this.authenticator = auth.enabled ? new Authenticator({ auth, tenants: settings.tenants, quotas: settings.quotas }) : undefined;
  }

  /** Whether the HTTP guard has anything to do (auth on, or per-IP quotas). */
  get guardsHttp(): boolean {
    return this.authenticator !== undefined || this.settings.quotas.anonymousPerIp !== undefined;
  }

  /** `HttpServerOptions.guard`: installs the guard when there is something to guard. */
  httpGuard<E extends Env>(address: (c: Context<E>) => string | undefined): ((app: Hono<E>, base: string) => void) | undefined {
    if (!this.guardsHttp) return undefined;
    return (app, base) =>
      installHttpGuard(app, base, {
        authenticator: this.authenticator,
        auth: this.settings.auth,
        anonymousPerIp: this.settings.quotas.anonymousPerIp,
        limiter: this.limiter,
        audit: this.audit,
        address,
        realm: this.settings.name,
      });
  }

  /** The service with per-principal concurrency and rate quotas and audit notes (as is when none is configured). */
  wrap(service: RcpService): RcpService {
    const { quotas, tenants } = this.settings;
    const metered = quotas.default !== undefined || quotas.anonymousPerIp !== undefined || Object.values(tenants).some((t) => t.quota);
    return metered || this.audit ? new GuardedService(service, this.limiter, this.audit) : service;
  }

  /** Chain the audit line onto a session observer. */
  observe(onFinished: ((info: FinishedInfo) => void) | undefined): ((info: FinishedInfo) => void) | undefined {
    const audit = this.audit;
    if (!audit) return onFinished;
    return (info) => {
      onFinished?.(info);
      audit.finished(info);
    };
  }

  /** The principal stdio calls run as (`auth.stdioPrincipal`), when configured. */
  stdioPrincipal(): Principal | undefined {
    const configured = this.settings.auth.stdioPrincipal;
    if (!configured) return undefined;
    const directory = { auth: this.settings.auth, tenants: this.settings.tenants, quotas: this.settings.quotas };
    return principalFor({ id: configured.id, scopes: configured.scopes, tenant: configured.tenant, via: 'stdio' }, directory);
  }

  close(): Promise<void> {
    return this.limiter.close?.() ?? Promise.resolve();
  }
}
