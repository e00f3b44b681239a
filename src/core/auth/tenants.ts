/**
 * From "who authenticated" (an id, claimed scopes, a tenant name) to a full principal: the
 * tenant's engine scope, scope ceiling, maxK and deadline ceiling, and the quota it draws on.
 */
import type { AuthSettings, QuotasSettings, TenantSettings } from './config.js';
import type { AuthMethod, Principal } from './principal.js';

export interface TenantDirectory {
  auth: AuthSettings;
  tenants: Readonly<Record<string, TenantSettings>>;
  quotas: QuotasSettings;
}

export interface Identity {
  id: string;
  scopes: readonly string[];
  tenant: string | undefined;
  via: AuthMethod;
  /** For anonymous access: the client address the quota is kept per. */
  address?: string;
}

/** Undefined when the identity names a tenant the config does not define (the caller answers 403). */
export function principalFor(identity: Identity, directory: TenantDirectory): Principal | undefined {
  const tenantName = identity.tenant ?? directory.auth.defaultTenant;
  const tenant = tenantName !== undefined ? directory.tenants[tenantName] : undefined;
  if (tenantName !== undefined && tenant === undefined) return undefined;
  const ceiling = tenant?.scopes;
  const scopes = ceiling ? identity.scopes.filter((scope) => ceiling.includes(scope)) : [...identity.scopes];
  const anonymous = identity.via === 'anonymous';
  return {
    id: identity.id,
    scopes,
    ...(tenantName !== undefined ? { tenant: tenantName } : {}),
    via: identity.via,
    limits: {
      ...(tenant?.engines ? { engines: tenant.engines } : {}),
      ...(tenant?.maxK !== undefined ? { maxK: tenant.maxK } : {}),
      ...(tenant?.maxDeadlineMs !== undefined ? { maxDeadlineMs: tenant.maxDeadlineMs } : {}),
    },
    // Namespaced by how the principal authenticated: an API key id and a token subject may coincide.
    quotaKey: anonymous ? `ip:${identity.address ?? 'unknown'}` : `principal:${identity.via}:${identity.id}`,
    quota: anonymous ? (directory.quotas.anonymousPerIp ?? tenant?.quota) : (tenant?.quota ?? directory.quotas.default),
  };
}
