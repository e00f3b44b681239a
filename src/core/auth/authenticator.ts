/**
 * Client authentication (§15.1: before `initialize`; §15.6: credentials only in standard
 * headers, never in params). A request carries `Authorization: Bearer <token>` (a JWT or an API
 * key) or `X-API-Key: <key>`; the outcome is a principal, or a refusal the transport turns into
 * 401/403 with `WWW-Authenticate` and -32012.
 */
import { ApiKeyStore } from './api-keys.js';
import { JwtVerifier, looksLikeJwt } from './jwt.js';
import type { Principal } from './principal.js';
import { principalFor, type TenantDirectory } from './tenants.js';

export interface AuthRefusal {
  ok: false;
  /** 401: no or bad credentials; 403: valid credentials that this gateway does not accept. */
  status: 401 | 403;
  /** RFC 6750 error code for `WWW-Authenticate` (absent when no credentials were sent). */
  error?: 'invalid_request' | 'invalid_token' | 'insufficient_scope';
  description: string;
  /** Who it was, when known (for the audit line). */
  principalId?: string;
}

export type AuthOutcome = { ok: true; principal: Principal } | AuthRefusal;

export interface Credentials {
  headers: Readonly<Record<string, string>>;
  /** The client's address, for anonymous quotas. */
  address: string | undefined;
}

export class Authenticator {
  private readonly keys: ApiKeyStore;
  private readonly jwt: JwtVerifier | undefined;

  constructor(private readonly directory: TenantDirectory) {
    this.keys = new ApiKeyStore(directory.auth.apiKeys);
    this.jwt = directory.auth.jwt ? new JwtVerifier(directory.auth.jwt) : undefined;
  }

  async authenticate({ headers, address }: Credentials): Promise<AuthOutcome> {
    const token = presentedToken(headers);
    if (token === undefined) return this.anonymous(address);
    if (token === '') return { ok: false, status: 401, error: 'invalid_request', description: 'malformed Authorization header' };
    if (this.jwt && looksLikeJwt(token)) {
      const outcome = await this.fromJwt(this.jwt, token);
      // An API key may happen to look like a JWT (two dots): it still counts as one.
      if (outcome.ok || this.keys.size === 0) return outcome;
      const key = await this.keys.find(token);
      return key ? this.resolved({ id: key.id, scopes: key.scopes, tenant: key.tenant, via: 'api-key' }) : outcome;
    }
    const key = await this.keys.find(token);
    if (!key) return { ok: false, status: 401, error: 'invalid_token', description: 'unknown API key' };
    return this.resolved({ id: key.id, scopes: key.scopes, tenant: key.tenant, via: 'api-key' });
  }

  private anonymous(address: string | undefined): AuthOutcome {
    const tenant = this.directory.auth.anonymousTenant;
    if (tenant === undefined) return { ok: false, status: 401, description: 'credentials required' };
    const scopes = this.directory.tenants[tenant]?.scopes ?? ['rcp:read'];
    return this.resolved({ id: 'anonymous', scopes, tenant, via: 'anonymous', ...(address !== undefined ? { address } : {}) });
  }

  private async fromJwt(verifier: JwtVerifier, token: string): Promise<AuthOutcome> {
    const verified = await verifier.verify(token);
    if (!verified.ok) return { ok: false, status: 401, error: 'invalid_token', description: verified.description };
    const settings = this.directory.auth.jwt!;
    const subject = verified.claims[settings.subjectClaim];
    if (typeof subject !== 'string' || subject === '') {
      return { ok: false, status: 401, error: 'invalid_token', description: `token has no "${settings.subjectClaim}" claim` };
    }
    const tenant = verified.claims[settings.tenantClaim];
    return this.resolved({
      id: subject,
      scopes: scopesOf(verified.claims[settings.scopeClaim] ?? verified.claims.scp),
      tenant: typeof tenant === 'string' ? tenant : undefined,
      via: 'jwt',
    });
  }

  private resolved(identity: Parameters<typeof principalFor>[0]): AuthOutcome {
    const principal = principalFor(identity, this.directory);
    if (principal) return { ok: true, principal };
    return { ok: false, status: 403, error: 'insufficient_scope', description: 'tenant is not configured', principalId: identity.id };
  }
}

/** The bearer token or API key, '' for a malformed Authorization header, undefined for none. */
function presentedToken(headers: Readonly<Record<string, string>>): string | undefined {
  const authorization = headers.authorization;
  if (authorization !== undefined) {
    const match = /^Bearer[ ]+([^\s,]+)\s*$/i.exec(authorization);
    return match ? match[1]! : '';
  }
  const apiKey = headers['x-api-key'];
  return apiKey !== undefined ? apiKey.trim() : undefined;
}

/** OAuth `scope` (space-separated) or `scp` (array). */
function scopesOf(claim: unknown): string[] {
  if (typeof claim === 'string') return claim.split(' ').filter((s) => s !== '');
  if (Array.isArray(claim)) return claim.filter((s): s is string => typeof s === 'string');
  return [];
}
