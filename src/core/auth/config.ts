/**
 * Config for client authentication, tenant scoping and quotas (`gateway.auth`,
 * `gateway.tenants`, `gateway.quotas`). Everything is off by default: the embedded default
 * config stays open on loopback (§15.1: "loopback unless fronted").
 */
import { z } from 'zod';
import { durationMs, positiveInt } from '../config/primitives.js';

/** Scopes a principal can hold; a scope outside this list is kept but grants nothing here. */
export const SCOPES = ['rcp:read', 'rcp:write', 'rcp:admin', 'rcp:metrics'] as const;

const ScopeListSchema = z.array(z.string().min(1));

/** A token bucket: `ratePerSec` tokens refilled per second, at most `burst` saved up. */
export const RateSchema = z.strictObject({
  ratePerSec: z.number().positive(),
  burst: positiveInt.optional(),
});
export type RateSettings = z.infer<typeof RateSchema>;

/** What one principal (or one anonymous IP) may use at once and over time. */
export const QuotaSchema = z.strictObject({
  rate: RateSchema.optional(),
  /** Requests of this principal in flight at once (each batch member counts). */
  maxConcurrent: positiveInt.optional(),
});
export type QuotaSettings = z.infer<typeof QuotaSchema>;

/** A tenant: the engines, methods and limits its principals get (§15.3, §15.6). */
export const TenantSchema = z.strictObject({
  /** Engine ids this tenant may reach; absent = every engine. */
  engines: z.array(z.string().min(1)).optional(),
  /** Ceiling on the scopes its principals hold (a token may claim less, never more); absent = no ceiling. */
  scopes: ScopeListSchema.optional(),
  /** Ceiling on `retrieve` k (below `gateway.maxK`). */
  maxK: positiveInt.optional(),
  /** Ceiling on a request's deadline (below `gateway.deadlineMs`). */
  maxDeadlineMs: durationMs.optional(),
  /** Per-principal quota of this tenant's principals (replaces `quotas.default`). */
  quota: QuotaSchema.optional(),
});
export type TenantSettings = z.infer<typeof TenantSchema>;

const sha256Hex = z.string().regex(/^sha256:[0-9a-f]{64}$/, 'expected "sha256:" and 64 lower-case hex digits (the key\'s SHA-256)');

export const ApiKeySchema = z.strictObject({
  /** The principal id the key authenticates as (audit lines and quota keys use it). */
  id: z.string().min(1),
  /** `sha256:<hex>` of the key; the key itself is never in the config. */
  hash: sha256Hex,
  tenant: z.string().min(1).optional(),
  scopes: ScopeListSchema.default(['rcp:read']),
});
export type ApiKeySettings = z.infer<typeof ApiKeySchema>;

export const JwtSchema = z
  .strictObject({
    /** A JWKS document URL (fetched and cached by jose; keys rotate by `kid`). */
    jwksUrl: z.url({ protocol: /^https?$/ }).optional(),
    /** Static verification keys: JWKs, or PEM SPKI public keys (with `alg`). */
    keys: z
      .array(z.union([z.looseObject({ kty: z.string() }), z.strictObject({ pem: z.string().min(1), alg: z.string().min(1) })]))
      .optional(),
    issuer: z.union([z.string().min(1), z.array(z.string().min(1)).min(1)]),
    audience: z.union([z.string().min(1), z.array(z.string().min(1)).min(1)]),
    /** Accepted signature algorithms; "none" and HMAC are never accepted with a JWKS URL. */
    algorithms: z.array(z.string().min(1)).default(['RS256', 'PS256', 'ES256', 'EdDSA']),
    clockSkewSec: z.int().min(0).max(300).default(30),
    /** Tokens must carry `exp`, and may not live longer than this. */
    maxTokenAgeSec: positiveInt.optional(),
    subjectClaim: z.string().min(1).default('sub'),
    /** A space-separated string (OAuth `scope`) or an array of strings. */
    scopeClaim: z.string().min(1).default('scope'),
    tenantClaim: z.string().min(1).default('tenant'),
  })
  .refine((jwt) => jwt.jwksUrl !== undefined || (jwt.keys?.length ?? 0) > 0, 'expected jwksUrl or keys');
export type JwtSettings = z.infer<typeof JwtSchema>;

/** Who may read an ops path when auth is on: anyone, any authenticated principal, or one holding the path's scope. */
const OpsRuleSchema = z.enum(['open', 'authenticated', 'scope']);

export const AuthSchema = z.strictObject({
  enabled: z.boolean().default(false),
  apiKeys: z.array(ApiKeySchema).default([]),
  jwt: JwtSchema.optional(),
  /** Requests without credentials run as this tenant's anonymous principal (quota per IP); absent = 401. */
  anonymousTenant: z.string().min(1).optional(),
  /** Tenant of a principal whose key or token names none. */
  defaultTenant: z.string().min(1).optional(),
  /** `/metrics` on the main port: "scope" = `rcp:metrics` (default when auth is on). */
  metrics: OpsRuleSchema.default('scope'),
  /** `/readyz`: "open" by default, so load balancers probe without credentials. `/healthz` is always open. */
  readyz: OpsRuleSchema.default('open'),
  /**
   * stdio has no in-band credential (§15.6): the peer is whoever spawned the process. With
   * `stdioPrincipal`, stdio calls run as that principal (scoping, quotas, audit); absent = unrestricted.
   */
  stdioPrincipal: z.strictObject({ id: z.string().min(1), tenant: z.string().min(1).optional(), scopes: ScopeListSchema }).optional(),
  /** Serve on a non-loopback address with auth off (for a gateway fronted by an authenticating proxy). */
  allowUnauthenticated: z.boolean().default(false),
  /** Write one audit line per request (who, method, engines, outcome); on whenever auth is on. */
  audit: z.boolean().optional(),
});
export type AuthSettings = z.infer<typeof AuthSchema>;

export const QuotasSchema = z.strictObject({
  /** Quota of every principal whose tenant sets none. */
  default: QuotaSchema.optional(),
  /** Quota of each anonymous client IP (auth off, or `auth.anonymousTenant`). */
  anonymousPerIp: QuotaSchema.optional(),
  /** Where rate-limit buckets live: this process, or Redis shared by every replica. */
  store: z.enum(['memory', 'redis']).default('memory'),
  /** Redis URL for store "redis" (`${ENV}` allowed), e.g. redis://127.0.0.1:6379/0. */
  redisUrl: z.string().min(1).optional(),
  /** Key prefix in Redis, so several gateways can share one Redis. */
  redisPrefix: z.string().min(1).default('rcpgw'),
});
export type QuotasSettings = z.infer<typeof QuotasSchema>;

export const TenantsSchema = z.record(z.string().min(1), TenantSchema);

/** Cross-checks between auth, tenants, quotas and the engine list (schema.ts superRefine). */
export function authProblems(
  auth: AuthSettings,
  tenants: Record<string, TenantSettings>,
  quotas: QuotasSettings,
  engineIds: ReadonlySet<string>,
): Array<{ path: Array<string | number>; message: string }> {
  const problems: Array<{ path: Array<string | number>; message: string }> = [];
  const tenant = (name: string | undefined, path: Array<string | number>): void => {
    if (name !== undefined && !(name in tenants)) problems.push({ path, message: `unknown tenant "${name}"` });
  };
  auth.apiKeys.forEach((key, i) => tenant(key.tenant, ['auth', 'apiKeys', i, 'tenant']));
  tenant(auth.anonymousTenant, ['auth', 'anonymousTenant']);
  tenant(auth.defaultTenant, ['auth', 'defaultTenant']);
  tenant(auth.stdioPrincipal?.tenant, ['auth', 'stdioPrincipal', 'tenant']);
  const seen = new Map<string, number>();
  auth.apiKeys.forEach((key, i) => {
    const first = seen.get(key.hash);
    if (first !== undefined) problems.push({ path: ['auth', 'apiKeys', i, 'hash'], message: `same key as auth.apiKeys[${first}]` });
    seen.set(key.hash, i);
  });
  for (const [name, settings] of Object.entries(tenants)) {
    for (const id of settings.engines ?? []) {
      if (!engineIds.has(id)) problems.push({ path: ['tenants', name, 'engines'], message: `unknown engine id "${id}"` });
    }
  }
  if (quotas.store === 'redis' && quotas.redisUrl === undefined) {
    problems.push({ path: ['quotas', 'redisUrl'], message: 'expected a Redis URL for store "redis"' });
  }
  if (auth.enabled && auth.apiKeys.length === 0 && !auth.jwt && auth.anonymousTenant === undefined) {
    problems.push({ path: ['auth'], message: 'auth is enabled but no apiKeys, jwt or anonymousTenant is configured' });
  }
  return problems;
}
