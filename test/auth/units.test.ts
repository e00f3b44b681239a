/**
 * The pure parts of auth and quotas: token bucket arithmetic (on a fake clock), key hashing,
 * the bind policy, method scopes, tenant resolution, scoping of engines and settings, JWT rules
 * that need no process (algorithms, token age), and the config cross-checks.
 */
import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { SignJWT, generateSecret } from 'jose';
import { hashApiKey, ApiKeyStore } from '../../src/core/auth/api-keys.js';
import { isLoopbackHost, unsafeBindReason } from '../../src/core/auth/bind-policy.js';
import { AuthSchema, JwtSchema, QuotasSchema, authProblems } from '../../src/core/auth/config.js';
import { JwtVerifier, looksLikeJwt } from '../../src/core/auth/jwt.js';
import { assertMethodAllowed, requiredScope, type Principal } from '../../src/core/auth/principal.js';
import { ConcurrencyCounter, TokenBucketLimiter } from '../../src/core/auth/quota.js';
import { scopeEngines, scopeSettings } from '../../src/core/auth/scoping.js';
import { principalFor } from '../../src/core/auth/tenants.js';
import { cursorKey } from '../../src/core/federation/cursor.js';
import { GatewaySchema } from '../../src/core/config/schema.js';
import { validateConfig } from '../../src/core/config/validate.js';
import { AuditLog } from '../../src/core/auth/audit.js';
import { Authenticator } from '../../src/core/auth/authenticator.js';
import { GuardedService } from '../../src/core/auth/guarded-service.js';
import type { Logger } from '../../src/core/observability/logger.js';
import type { CallContext } from '../../src/core/service/contract.js';
import { testCallContext } from '../support/call-context.js';
import type { FinishedInfo } from '../../src/core/session/session.js';
import { AUDIENCE, ISSUER, keyHash, rsaSigner } from './support.js';

const principal = (over: Partial<Principal> = {}): Principal => ({
  id: 'p',
  scopes: ['rcp:read'],
  via: 'api-key',
  limits: {},
  quotaKey: 'principal:p',
  quota: undefined,
  ...over,
});

describe('token bucket', () => {
  it('allows a burst, then one token per 1/rate seconds, and says how long to wait', () => {
    let now = 0;
    const bucket = new TokenBucketLimiter(() => now);
    const rate = { ratePerSec: 2, burst: 3 };
    expect([1, 2, 3].map(() => bucket.takeNow('k', rate).ok)).toEqual([true, true, true]);
    expect(bucket.takeNow('k', rate)).toEqual({ ok: false, retryAfterMs: 500 });
    now = 250;
    expect(bucket.takeNow('k', rate)).toEqual({ ok: false, retryAfterMs: 250 });
    now = 500;
    expect(bucket.takeNow('k', rate).ok).toBe(true);
    expect(bucket.takeNow('other', rate).ok).toBe(true); // buckets are per key
    now = 60_000;
    expect([1, 2, 3, 4].map(() => bucket.takeNow('k', rate).ok)).toEqual([true, true, true, false]); // never above burst
  });

  it('defaults the bucket to one second of tokens', () => {
    const bucket = new TokenBucketLimiter(() => 0);
    const rate = { ratePerSec: 2 };
    expect([1, 2, 3].map(() => bucket.takeNow('k', rate).ok)).toEqual([true, true, false]);
  });

  it('counts requests in flight per key and releases each slot once', () => {
    const counter = new ConcurrencyCounter();
    const release = counter.tryEnter('k', 1)!;
    expect(counter.tryEnter('k', 1)).toBeUndefined();
    release();
    release();
    expect(counter.inFlight('k')).toBe(0);
    expect(counter.tryEnter('k', 1)).toBeDefined();
  });
});

describe('API keys', () => {
  it('hash to the sha256:<hex> the config holds, and match only the exact key', async () => {
    expect(await hashApiKey('secret-key')).toBe(keyHash('secret-key'));
    const store = new ApiKeyStore([{ id: 'a', hash: keyHash('secret-key'), scopes: ['rcp:read'] }]);
    expect((await store.find('secret-key'))?.id).toBe('a');
    expect(await store.find('secret-key ')).toBeUndefined();
    expect(await store.find('')).toBeUndefined();
  });
});

describe('bind policy', () => {
  it('knows loopback addresses', () => {
    for (const host of ['127.0.0.1', '127.1.2.3', 'localhost', '::1', '[::1]', '::ffff:127.0.0.1'])
      expect(isLoopbackHost(host), host).toBe(true);
    for (const host of ['0.0.0.0', '::', '10.0.0.1', 'example.com', '128.0.0.1']) expect(isLoopbackHost(host), host).toBe(false);
  });

  it('refuses a non-loopback address only with auth off and no explicit allowance', () => {
    const off = AuthSchema.parse({});
    expect(unsafeBindReason('0.0.0.0', off)).toContain('§15.1');
    expect(unsafeBindReason('127.0.0.1', off)).toBeUndefined();
    expect(unsafeBindReason('0.0.0.0', { ...off, allowUnauthenticated: true })).toBeUndefined();
    expect(unsafeBindReason('0.0.0.0', { ...off, enabled: true })).toBeUndefined();
  });
});

describe('method scopes', () => {
  it('need rcp:write for index/*, rcp:admin for vendor methods, rcp:read otherwise', () => {
    expect(requiredScope('retrieve')).toBe('rcp:read');
    expect(requiredScope('catalog/list')).toBe('rcp:read');
    expect(requiredScope('index/add')).toBe('rcp:write');
    expect(requiredScope('index/delete')).toBe('rcp:write');
    expect(requiredScope('x-acme/purge')).toBe('rcp:admin');
    expect(() => assertMethodAllowed(principal(), 'index/add')).toThrow(expect.objectContaining({ code: -32012 }));
    expect(() => assertMethodAllowed(principal({ scopes: [] }), 'initialize')).not.toThrow();
    expect(() => assertMethodAllowed(principal({ scopes: ['rcp:admin'] }), 'index/add')).not.toThrow();
  });
});

describe('tenants', () => {
  const directory = {
    auth: AuthSchema.parse({}),
    tenants: { a: { engines: ['web'], scopes: ['rcp:read'], maxK: 5, quota: { maxConcurrent: 2 } } },
    quotas: QuotasSchema.parse({ default: { maxConcurrent: 9 }, anonymousPerIp: { maxConcurrent: 1 } }),
  };

  it('cap claimed scopes at the tenant ceiling and carry its limits and quota', () => {
    const p = principalFor({ id: 'x', scopes: ['rcp:read', 'rcp:write'], tenant: 'a', via: 'jwt' }, directory)!;
    expect(p.scopes).toEqual(['rcp:read']);
    expect(p.limits).toEqual({ engines: ['web'], maxK: 5 });
    expect(p.quota).toEqual({ maxConcurrent: 2 });
    expect(p.quotaKey).toBe('principal:jwt:x');
  });

  it('give tenant-less principals the default quota, anonymous ones a quota per address, and refuse unknown tenants', () => {
    expect(principalFor({ id: 'y', scopes: [], tenant: undefined, via: 'api-key' }, directory)!.quota).toEqual({ maxConcurrent: 9 });
    const anon = principalFor({ id: 'anonymous', scopes: [], tenant: 'a', via: 'anonymous', address: '10.0.0.7' }, directory)!;
    expect(anon.quotaKey).toBe('ip:10.0.0.7');
    expect(anon.quota).toEqual({ maxConcurrent: 1 });
    expect(principalFor({ id: 'z', scopes: [], tenant: 'nope', via: 'jwt' }, directory)).toBeUndefined();
  });
});

describe('scoping', () => {
  const engines = [{ id: 'web' }, { id: 'docs' }];
  const settings = GatewaySchema.parse({ maxK: 50 });

  it('keeps only the principal engines, and everything without a principal', () => {
    expect(scopeEngines(engines, principal({ limits: { engines: ['docs'] } }))).toEqual([{ id: 'docs' }]);
    expect(scopeEngines(engines, undefined)).toBe(engines);
  });

  it('lowers maxK and gives each principal its own cursor key', () => {
    expect(scopeSettings(settings, undefined)).toBe(settings);
    const a = scopeSettings(settings, principal({ id: 'a', limits: { maxK: 5 } }));
    const b = scopeSettings(settings, principal({ id: 'b', limits: { maxK: 500 } }));
    expect(a.maxK).toBe(5);
    expect(b.maxK).toBe(50);
    expect(a.cursorSecret).not.toBe(b.cursorSecret);
    expect(scopeSettings(settings, principal({ id: 'a' })).cursorSecret).toBe(a.cursorSecret);
    // A cursor key is an HMAC key: ids that differ only by trailing NULs, or the same id in
    // another tenant, must not get keys that HMAC cannot tell apart (zero-padded to one block).
    const keyOf = (over: Parameters<typeof principal>[0]): Uint8Array =>
      cursorKey(scopeSettings({ ...settings, cursorSecret: 'a-16-char-secret' }, principal(over)).cursorSecret);
    const tag = (key: Uint8Array): string => createHmac('sha256', key).update('cursor body').digest('hex');
    const tags = [
      keyOf({ id: 'alice' }),
      keyOf({ id: 'alice\u0000' }),
      keyOf({ id: 'alice\u0000\u0000' }),
      keyOf({ id: 'alice', tenant: 'b' }),
    ].map(tag);
    expect(new Set(tags).size).toBe(4);
  });
});

describe('JWT rules', () => {
  const base = { issuer: ISSUER, audience: AUDIENCE };

  it('recognise compact tokens', () => {
    expect(looksLikeJwt('a.b.c')).toBe(true);
    expect(looksLikeJwt('plain-api-key')).toBe(false);
  });

  it('refuse an algorithm that is not listed (an HMAC token against public keys) and a token older than maxTokenAgeSec', async () => {
    const signer = await rsaSigner('k');
    const verifier = new JwtVerifier(JwtSchema.parse({ ...base, keys: [signer.publicJwk], maxTokenAgeSec: 60 }));
    const hmac = await new SignJWT({ sub: 'x' })
      .setProtectedHeader({ alg: 'HS256' })
      .setIssuer(ISSUER)
      .setAudience(AUDIENCE)
      .setExpirationTime('5m')
      .sign(await generateSecret('HS256'));
    expect(await verifier.verify(hmac)).toEqual({ ok: false, description: 'token algorithm is not accepted' });
    const old = await signer.token({ sub: 'x' }, { issuedAgoSec: 120 });
    expect(await verifier.verify(old)).toEqual({ ok: false, description: 'token expired' });
    const fresh = await signer.token({ sub: 'x' });
    expect((await verifier.verify(fresh)).ok).toBe(true);
  });
});

describe('config', () => {
  it('stays off by default and reports cross-reference problems by path', () => {
    expect(GatewaySchema.parse({}).auth).toMatchObject({ enabled: false, apiKeys: [], metrics: 'scope', readyz: 'open' });
    const problems = authProblems(
      AuthSchema.parse({
        enabled: true,
        apiKeys: [
          { id: 'a', hash: keyHash('k'), tenant: 'ghost' },
          { id: 'b', hash: keyHash('k') },
        ],
      }),
      { t: { engines: ['missing'] } },
      QuotasSchema.parse({ store: 'redis' }),
      new Set(['web']),
    );
    expect(problems.map((p) => `${p.path.join('.')}: ${p.message}`)).toEqual([
      'auth.apiKeys.0.tenant: unknown tenant "ghost"',
      'auth.apiKeys.1.hash: same key as auth.apiKeys[0]',
      'tenants.t.engines: unknown engine id "missing"',
      'quotas.redisUrl: expected a Redis URL for store "redis"',
    ]);
  });

  it('rejects a plain key where its hash belongs, through the config validator', () => {
    const raw = {
      engines: [{ id: 'web', transport: 'http', url: 'http://127.0.0.1:1/rcp' }],
      gateway: { auth: { apiKeys: [{ id: 'a', hash: 'my-plain-key' }] } },
    };
    expect(() => validateConfig(raw, {})).toThrow(/gateway\.auth\.apiKeys\[0\]\.hash/);
  });
});

describe('guarded service', () => {
  const inner = { describe: () => ({}) as never, defaultDeadlineMs: 1_000, call: () => Promise.resolve({ ok: true }) };
  const ctx = (over: Partial<CallContext>): CallContext => testCallContext({ deadlineAt: 0, transport: 'stdio', ...over }, 1_000);

  it('answers -32011 with retryAfterMs over a stdio principal rate, and leaves HTTP rates to the guard', async () => {
    const service = new GuardedService(inner, new TokenBucketLimiter(() => 0), undefined);
    const metered = principal({ quota: { rate: { ratePerSec: 1, burst: 1 } } });
    expect(await service.call('retrieve', {}, ctx({ principal: metered }))).toEqual({ ok: true });
    await expect(service.call('retrieve', {}, ctx({ principal: metered }))).rejects.toMatchObject({
      code: -32011,
      data: { retryAfterMs: 1_000 },
    });
    expect(await service.call('retrieve', {}, ctx({ principal: metered, transport: 'http' }))).toEqual({ ok: true });
  });
});

describe('audit log', () => {
  const capture = (): { lines: Array<Record<string, unknown>>; logger: Logger } => {
    const lines: Array<Record<string, unknown>> = [];
    const logger: Logger = {
      debug: () => undefined,
      info: (fields) => void lines.push(fields),
      warn: () => undefined,
      error: () => undefined,
      child: () => logger,
    };
    return { lines, logger };
  };
  const finished = (ctx: CallContext): FinishedInfo => ({
    method: 'retrieve',
    code: 0,
    durationMs: 3,
    abortReason: undefined,
    response: { jsonrpc: '2.0', id: 1, result: { _meta: { engines: ['web'] } } },
    ctx,
  });
  const ctx = { transport: 'http', principal: principal({ id: 'alice', tenant: 't' }) } as CallContext;

  it('names who, what, where and how, with the query only under logQueries', () => {
    for (const logQueries of [false, true]) {
      const { lines, logger } = capture();
      const audit = new AuditLog(logger, () => logQueries);
      audit.noteCall({ query: 'secret words' }, ctx);
      audit.finished(finished(ctx));
      expect(lines).toHaveLength(1);
      expect(lines[0]!.audit).toMatchObject({
        principal: 'alice',
        tenant: 't',
        via: 'api-key',
        method: 'retrieve',
        engines: ['web'],
        code: 0,
        outcome: 'ok',
      });
      expect((lines[0]!.audit as { query?: string }).query).toBe(logQueries ? 'secret words' : undefined);
    }
  });
});

describe('authenticator', () => {
  it('accepts an API key that looks like a JWT when no token verifies, and keeps the token error otherwise', async () => {
    const signer = await rsaSigner('k');
    const directory = {
      auth: AuthSchema.parse({
        enabled: true,
        apiKeys: [{ id: 'dotted', hash: keyHash('abc.def.ghi') }],
        jwt: { keys: [signer.publicJwk], issuer: ISSUER, audience: AUDIENCE },
      }),
      tenants: {},
      quotas: QuotasSchema.parse({}),
    };
    const authenticator = new Authenticator(directory);
    const dotted = await authenticator.authenticate({ headers: { authorization: 'Bearer abc.def.ghi' }, address: undefined });
    expect(dotted).toMatchObject({ ok: true, principal: { id: 'dotted', via: 'api-key' } });
    const expired = await signer.token({ sub: 's' }, { expiresInSec: -600 });
    expect(await authenticator.authenticate({ headers: { authorization: `Bearer ${expired}` }, address: undefined })).toMatchObject({
      ok: false,
      status: 401,
      description: 'token expired',
    });
    const token = await signer.token({ sub: 's', scope: 'rcp:read rcp:write' });
    expect(await authenticator.authenticate({ headers: { authorization: `bearer ${token}` }, address: undefined })).toMatchObject({
      ok: true,
      principal: { id: 's', via: 'jwt', scopes: ['rcp:read', 'rcp:write'], quotaKey: 'principal:jwt:s' },
    });
  });
});
