/**
 * Who is calling: the principal a request runs as, what its scopes allow, and the limits its
 * tenant sets. Built once per request by the authenticator (HTTP) or once per connection (stdio)
 * and carried on `CallContext.principal`.
 */
import { ErrorCode, RcpError } from '../protocol/errors.js';
import { vendorCapabilityOf } from '../protocol/methods.js';
import type { QuotaSettings } from './config.js';

export type AuthMethod = 'api-key' | 'jwt' | 'anonymous' | 'stdio';

export interface PrincipalLimits {
  /** Engine ids this principal may reach; undefined = every engine. */
  engines?: readonly string[];
  /** Ceiling on `retrieve` k. */
  maxK?: number;
  /** Ceiling on a request's deadline in ms. */
  maxDeadlineMs?: number;
}

export interface Principal {
  /** Stable id: the API key's id, the token's subject, `anonymous`, or the configured stdio id. */
  id: string;
  scopes: readonly string[];
  tenant?: string;
  via: AuthMethod;
  limits: PrincipalLimits;
  /** Whose quota a request draws on: `principal:<via>:<id>`, or `ip:<address>` for anonymous access. */
  quotaKey: string;
  quota: QuotaSettings | undefined;
}

/** The scope a method needs (§15.3: writes are authorised separately from reads). */
export function requiredScope(method: string): 'rcp:read' | 'rcp:write' | 'rcp:admin' {
  if (method === 'index/add' || method === 'index/delete') return 'rcp:write';
  // `shutdown` and vendor extensions (routed as-is to an engine, with the engine's own
  // credentials) are the operator's to hand out.
  if (method === 'shutdown' || vendorCapabilityOf(method) !== undefined) return 'rcp:admin';
  return 'rcp:read';
}

export function hasScope(principal: Principal, scope: string): boolean {
  return principal.scopes.includes(scope) || principal.scopes.includes('rcp:admin');
}

/**
 * -32012 when the principal may not call `method` (§15.6: applied before capability gating, so
 * a probe cannot tell advertised from unadvertised methods it may not use).
 */
export function assertMethodAllowed(principal: Principal, method: string): void {
  // initialize, info and ping carry no data: any authenticated principal may call them.
  if (method === 'initialize' || method === 'info' || method === 'ping') return;
  const scope = requiredScope(method);
  if (hasScope(principal, scope)) return;
  throw new RcpError(ErrorCode.Unauthorized, `not authorised for ${method}`, { detail: `requires scope ${scope}`, retryable: false });
}

/** The deadline a request gets once the principal's ceiling applies. */
export function deadlineCeiling(principal: Principal | undefined): number {
  return principal?.limits.maxDeadlineMs ?? Infinity;
}
