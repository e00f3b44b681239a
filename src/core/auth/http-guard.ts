/**
 * The HTTP side of auth and quotas, as Hono middleware in front of the RCP endpoint and the ops
 * paths: authenticate before the body is read (§15.1: before `initialize`), bind the principal to
 * the request for the endpoint's session, and apply the request-rate quota (429 + Retry-After,
 * §5.2, mirroring -32011). `/metrics` and `/readyz` follow their own rules; `/healthz` is open.
 */
import type { Context, Env, Hono, MiddlewareHandler } from 'hono';
import { ErrorCode } from '../protocol/errors.js';
import { errorResponse } from '../protocol/jsonrpc.js';
import type { AuditLog } from './audit.js';
import type { Authenticator, AuthRefusal } from './authenticator.js';
import type { AuthSettings, QuotaSettings } from './config.js';
import { hasScope, type Principal } from './principal.js';
import { ConcurrencyCounter, CONCURRENCY_RETRY_AFTER_MS, type RateLimiter } from './quota.js';

export interface HttpGuardOptions<E extends Env> {
  /** Absent when auth is off: requests run without a principal, and only per-IP quotas apply. */
  authenticator: Authenticator | undefined;
  auth: AuthSettings;
  /** Quota of each client address when there is no principal (auth off). */
  anonymousPerIp: QuotaSettings | undefined;
  limiter: RateLimiter;
  audit: AuditLog | undefined;
  /** The client's address (the runtime knows its socket). */
  address: (c: Context<E>) => string | undefined;
  realm: string;
}

/** Principals bound to the requests they authenticated (keyed by the runtime's request object). */
const principals = new WeakMap<object, Principal>();

/** The principal the guard bound to this request, if any (read by the endpoint for its session). */
export function principalOf(c: { req: { raw: object } }): Principal | undefined {
  return principals.get(c.req.raw);
}

/** Install the guard on `app` for the RCP base path and the ops paths (call before the routes are added). */
export function installHttpGuard<E extends Env>(app: Hono<E>, base: string, options: HttpGuardOptions<E>): void {
  // Once, on `<base>/*`: Hono's wildcard matches the bare base too. Mounted on both, the guard
  // authenticated a POST to the base, charged its quota token and counted it in flight twice.
  app.use(`${base}/*`, rpcGuard(base, options));
  if (!options.authenticator) return;
  // The MCP facade's sessions are not tenant-scoped: with auth on, only an unrestricted principal may use it.
  const unscoped = opsGuard('/mcp', 'admin', options);
  app.use('/mcp', unscoped);
  app.use('/mcp/*', unscoped);
  for (const [path, rule] of [
    ['/metrics', options.auth.metrics],
    ['/readyz', options.auth.readyz],
  ] as const) {
    if (rule !== 'open') app.use(path, opsGuard(path, rule, options));
  }
}

function rpcGuard<E extends Env>(base: string, options: HttpGuardOptions<E>): MiddlewareHandler<E> {
  const { authenticator, limiter, audit } = options;
  const counter = new ConcurrencyCounter();
  return async (c, next) => {
    if (c.req.method !== 'POST') return next();
    const address = options.address(c);
    let principal: Principal | undefined;
    if (authenticator) {
      const outcome = await authenticator.authenticate({ headers: credentialHeaders(c), address });
      if (!outcome.ok) {
        audit?.refused({
          ...refusalWho(outcome),
          method: methodOf(c.req.path, base),
          status: outcome.status,
          code: ErrorCode.Unauthorized,
          reason: outcome.description,
          ...(address ? { address } : {}),
        });
        return refuse(outcome, options.realm);
      }
      principal = outcome.principal;
      principals.set(c.req.raw, principal);
    }
    const quota = principal ? principal.quota : options.anonymousPerIp;
    const key = principal ? principal.quotaKey : `ip:${address ?? 'unknown'}`;
    const limited = (retryAfterMs: number, reason: string): Response => {
      audit?.refused({
        ...(principal ? { principal } : {}),
        method: methodOf(c.req.path, base),
        status: 429,
        code: ErrorCode.RateLimited,
        reason,
        ...(address ? { address } : {}),
      });
      return tooManyRequests(retryAfterMs, reason);
    };
    if (quota?.rate) {
      const decision = await limiter.take(key, quota.rate);
      if (!decision.ok) return limited(decision.retryAfterMs, 'request rate over the quota');
    }
    // With a principal, the session's service counts each request in flight (guarded-service.ts);
    // without one, the HTTP request is what can be counted here.
    if (principal || quota?.maxConcurrent === undefined) return next();
    const release = counter.tryEnter(key, quota.maxConcurrent);
    if (!release) return limited(CONCURRENCY_RETRY_AFTER_MS, `more than ${quota.maxConcurrent} requests in flight`);
    try {
      await next();
    } finally {
      release();
    }
  };
}

function opsGuard<E extends Env>(
  path: string,
  rule: 'authenticated' | 'scope' | 'admin',
  options: HttpGuardOptions<E>,
): MiddlewareHandler<E> {
  const scope = rule === 'admin' ? 'rcp:admin' : 'rcp:metrics';
  return async (c, next) => {
    if (c.req.method === 'OPTIONS') return next();
    const outcome = await options.authenticator!.authenticate({ headers: credentialHeaders(c), address: options.address(c) });
    if (!outcome.ok) return refuse(outcome, options.realm);
    const { principal } = outcome;
    if (principal.via === 'anonymous') return refuse({ ok: false, status: 401, description: 'credentials required' }, options.realm);
    if (rule !== 'authenticated' && !hasScope(principal, scope)) {
      const reason = `requires scope ${scope}`;
      options.audit?.refused({ principal, method: path, status: 403, code: ErrorCode.Unauthorized, reason });
      return refuse({ ok: false, status: 403, error: 'insufficient_scope', description: reason }, options.realm, scope);
    }
    return next();
  };
}

function credentialHeaders(c: Context): Record<string, string> {
  const out: Record<string, string> = {};
  const authorization = c.req.header('authorization');
  if (authorization !== undefined) out.authorization = authorization;
  const apiKey = c.req.header('x-api-key');
  if (apiKey !== undefined) out['x-api-key'] = apiKey;
  return out;
}

function refusalWho(outcome: AuthRefusal): { principalId?: string } {
  return outcome.principalId !== undefined ? { principalId: outcome.principalId } : {};
}

/** The method a refused request named in its path, for the audit line (a batch names none). */
function methodOf(path: string, base: string): string {
  const rest = path.slice(base.length).replace(/^\/+/, '');
  if (rest === '') return '(batch)';
  try {
    return decodeURIComponent(rest).slice(0, 128);
  } catch {
    return rest.slice(0, 128);
  }
}

const JSON_HEADERS = { 'content-type': 'application/json', 'cache-control': 'no-store' };

/** 401/403 with RFC 6750 `WWW-Authenticate` and the -32012 body (§15.6: a uniform, distinguishable refusal). */
export function refuse(outcome: AuthRefusal, realm: string, scope?: string): Response {
  const params = [`realm="${quoted(realm)}"`];
  if (outcome.error) params.push(`error="${outcome.error}"`, `error_description="${quoted(outcome.description)}"`);
  if (scope) params.push(`scope="${scope}"`);
  const body = errorResponse(null, {
    code: ErrorCode.Unauthorized,
    message: outcome.status === 401 ? 'unauthorized' : 'forbidden',
    data: { detail: outcome.description, retryable: false },
  });
  return new Response(JSON.stringify(body), {
    status: outcome.status,
    headers: { ...JSON_HEADERS, 'www-authenticate': `Bearer ${params.join(', ')}` },
  });
}

/** 429 + Retry-After (whole seconds, at least 1) and the -32011 body with `retryAfterMs` (§12.1). */
export function tooManyRequests(retryAfterMs: number, detail: string): Response {
  const body = errorResponse(null, {
    code: ErrorCode.RateLimited,
    message: 'rate limited',
    data: { retryable: true, retryAfterMs, detail },
  });
  return new Response(JSON.stringify(body), {
    status: 429,
    headers: { ...JSON_HEADERS, 'retry-after': String(Math.max(1, Math.ceil(retryAfterMs / 1000))) },
  });
}

function quoted(text: string): string {
  return text.replace(/[\\"]/g, '\\$&').replace(/[\r\n]/g, ' ');
}
