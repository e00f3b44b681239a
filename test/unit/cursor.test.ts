/**
 * Gateway pagination cursors (§10, src/federation/cursor.ts): signed, opaque, expiring, bound
 * to the request they were issued for.
 */
import { describe, expect, it } from 'vitest';
import {
  canonicalJson,
  canonicalRequest,
  cursorKey,
  legacyRequestFingerprint,
  openCursor,
  requestFingerprint,
  sealCursor,
  type CursorPayload,
} from '../../src/core/federation/cursor.js';
import { RcpError } from '../../src/core/protocol/errors.js';

const key = cursorKey('a-shared-secret-of-some-length');
const fingerprint = requestFingerprint({ query: 'q', k: 3 }, 'x-rcpgw');
const payload = (over: Partial<CursorPayload> = {}): CursorPayload => ({
  method: 'retrieve',
  fingerprint,
  expiresAt: 2_000_000_000_000,
  position: { kind: 'fused', engines: ['a', 'b'], depth: { a: 6, b: 4 }, segment: 1, offset: 2 },
  ...over,
});

function rejection(fn: () => unknown): { code: number; data: Record<string, unknown> | undefined } {
  try {
    fn();
  } catch (err) {
    if (err instanceof RcpError) return { code: err.code, data: err.data };
    throw err;
  }
  throw new Error('expected a rejection');
}

describe('gateway cursors', () => {
  it('round-trips a payload', () => {
    const token = sealCursor(payload(), key);
    expect(token).toMatch(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
    expect(openCursor(token, key, { method: 'retrieve', fingerprint }, 1_000)).toEqual(payload());
    const routed = payload({ method: 'graph', position: { kind: 'routed', engine: 'g', cursor: 'opaque-engine-cursor' } });
    expect(openCursor(sealCursor(routed, key), key, { method: 'graph', fingerprint }, 1_000)).toEqual(routed);
  });

  it('rejects a forged or corrupted cursor with -32602 naming the cursor field', () => {
    const token = sealCursor(payload(), key);
    const [body, mac] = token.split('.') as [string, string];
    const forgedBody = Buffer.from(
      JSON.stringify({ v: 1, ...payload({ position: { kind: 'fused', engines: ['a'], depth: { a: 6 }, segment: 0, offset: 0 } }) }),
    ).toString('base64url');
    const flipped = `${body.slice(0, 10)}${body[10] === 'A' ? 'B' : 'A'}${body.slice(11)}`;
    for (const bad of [
      `${forgedBody}.${mac}`,
      `${flipped}.${mac}`,
      `${body}.${mac.slice(0, -2)}`,
      `${body}`,
      'garbage',
      `${body}.${mac}.x`,
      '.',
    ]) {
      const r = rejection(() => openCursor(bad, key, { method: 'retrieve', fingerprint }, 1_000));
      expect(r.code).toBe(-32602);
      expect(r.data?.field).toBe('cursor');
    }
    // Signed with another key (e.g. another replica without the shared secret).
    const other = sealCursor(payload(), cursorKey('another-secret-entirely-0123'));
    expect(rejection(() => openCursor(other, key, { method: 'retrieve', fingerprint }, 1_000)).code).toBe(-32602);
  });

  it('rejects a validly signed but malformed payload with -32602', () => {
    const token = sealCursor({ ...payload(), position: { kind: 'fused', engines: ['a'], depth: {}, segment: 0, offset: 0 } }, key);
    expect(rejection(() => openCursor(token, key, { method: 'retrieve', fingerprint }, 1_000)).code).toBe(-32602);
  });

  it('rejects an expired cursor with -32015', () => {
    const token = sealCursor(payload({ expiresAt: 5_000 }), key);
    expect(openCursor(token, key, { method: 'retrieve', fingerprint }, 5_000).expiresAt).toBe(5_000);
    const r = rejection(() => openCursor(token, key, { method: 'retrieve', fingerprint }, 5_001));
    expect(r.code).toBe(-32015);
    expect(r.data?.field).toBe('cursor');
  });

  it('rejects a cursor replayed against another request or method with -32602', () => {
    const token = sealCursor(payload(), key);
    const other = requestFingerprint({ query: 'q', k: 4 }, 'x-rcpgw');
    expect(rejection(() => openCursor(token, key, { method: 'retrieve', fingerprint: other }, 1_000)).code).toBe(-32602);
    expect(rejection(() => openCursor(token, key, { method: 'graph', fingerprint }, 1_000)).code).toBe(-32602);
  });

  it('fingerprints what makes a request the same request', () => {
    const base = { query: 'q', k: 3, filter: { year: { gte: 1960 } } };
    const fp = requestFingerprint(base, 'x-rcpgw');
    // Key order, the cursor itself and per-call _meta do not matter ...
    expect(requestFingerprint({ filter: { year: { gte: 1960 } }, k: 3, query: 'q', cursor: 'abc' }, 'x-rcpgw')).toBe(fp);
    expect(requestFingerprint({ ...base, _meta: { progressToken: 7, deadlineMs: 900, traceId: 't' } }, 'x-rcpgw')).toBe(fp);
    // ... the params and the gateway's own options do.
    expect(requestFingerprint({ ...base, k: 4 }, 'x-rcpgw')).not.toBe(fp);
    expect(requestFingerprint({ ...base, _meta: { 'x-rcpgw': { fusion: 'weighted' } } }, 'x-rcpgw')).not.toBe(fp);
    expect(canonicalJson({ b: [1, { d: 2, c: 3 }], a: null })).toBe('{"a":null,"b":[1,{"c":3,"d":2}]}');
  });

  it('uses one random key per process when no secret is configured', () => {
    const random = cursorKey(undefined);
    expect(random).toBe(cursorKey(undefined));
    expect(random.byteLength).toBe(32);
    const token = sealCursor(payload(), random);
    expect(rejection(() => openCursor(token, key, { method: 'retrieve', fingerprint }, 1_000)).code).toBe(-32602);
  });
});

/**
 * The cursor format is pinned byte for byte (portable-crypto.test.ts): the fingerprint and the
 * sealed payload must stay what the first implementation made, written here as it was
 * (object rest, spread, map/join), for random JSON params.
 */
describe('cursor bytes against the reference implementation', () => {
  const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
  const referenceCanonical = (value: unknown): string => {
    if (Array.isArray(value)) return `[${value.map(referenceCanonical).join(',')}]`;
    if (isObject(value)) {
      const keys = Object.keys(value)
        .filter((k) => value[k] !== undefined)
        .sort();
      return `{${keys.map((k) => `${JSON.stringify(k)}:${referenceCanonical(value[k])}`).join(',')}}`;
    }
    return JSON.stringify(value) ?? 'null';
  };
  const referenceFingerprintText = (params: Record<string, unknown>, vendorKey: string): string => {
    const { cursor: _cursor, _meta, ...rest } = params;
    const vendor = isObject(_meta) ? _meta[vendorKey] : undefined;
    return referenceCanonical(vendor === undefined ? rest : { ...rest, [`_meta.${vendorKey}`]: vendor });
  };

  // A small deterministic generator of JSON-ish values (seeded LCG), with the keys that matter here.
  let seed = 12345;
  const next = (n: number): number => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed % n;
  };
  const KEYS = ['query', 'k', 'cursor', '_meta', 'x-rcpgw', '_meta.x-rcpgw', 'filter', 'a', 'é', '__proto__', 'b b', 'Z'];
  const value = (depth: number): unknown => {
    const pick = next(depth > 2 ? 6 : 9);
    if (pick === 0) return null;
    if (pick === 1) return next(1000) - 500;
    if (pick === 2) return next(2) === 0;
    if (pick === 3) return `s${next(100)}"\\\n`;
    if (pick === 4) return 0.1 * next(100);
    if (pick === 5) return undefined;
    if (pick === 6) return Array.from({ length: next(4) }, () => value(depth + 1));
    return object(depth + 1);
  };
  const object = (depth: number): Record<string, unknown> => {
    const out: Record<string, unknown> = {};
    for (let i = next(5); i > 0; i--)
      Object.defineProperty(out, KEYS[next(KEYS.length)]!, { value: value(depth), enumerable: true, writable: true, configurable: true });
    return out;
  };

  it('fingerprints version 1 fused cursors exactly as before, and binds requests as specified, for 2,000 random requests', async () => {
    const { hash } = await import('node:crypto');
    // Native and portable digests give the same bytes (portable-crypto.test.ts): whichever is installed.
    for (let i = 0; i < 2_000; i++) {
      const params = object(0);
      if (next(2) === 0) params._meta = { 'x-rcpgw': value(1), traceId: 't' };
      const expected = hash('sha256', referenceFingerprintText(params, 'x-rcpgw'), 'base64url').slice(0, 22);
      expect(legacyRequestFingerprint(params as never, 'x-rcpgw')).toBe(expected);
      expect(canonicalJson(params)).toBe(referenceCanonical(params));
      const { cursor: _cursor, _meta, ...rest } = params;
      const vendor = isObject(_meta) ? _meta['x-rcpgw'] : undefined;
      const request = `${referenceCanonical(rest)}${vendor === undefined ? '' : `\n${referenceCanonical(vendor)}`}`;
      expect(canonicalRequest(params as never, 'x-rcpgw')).toBe(request);
      expect(requestFingerprint(params as never, 'x-rcpgw')).toBe(hash('sha256', request, 'base64url').slice(0, 22));
    }
  });

  it('binds a request unambiguously: no param stands in for the gateway options', () => {
    const options = { fusion: 'weighted', weights: { a: 50 } };
    const withOptions = canonicalRequest({ query: 'q', k: 3, _meta: { 'x-rcpgw': options } }, 'x-rcpgw');
    const asParam = canonicalRequest({ query: 'q', k: 3, '_meta.x-rcpgw': options }, 'x-rcpgw');
    const both = canonicalRequest({ query: 'q', k: 3, '_meta.x-rcpgw': { other: 1 }, _meta: { 'x-rcpgw': options } }, 'x-rcpgw');
    expect(new Set([withOptions, asParam, both, canonicalRequest({ query: 'q', k: 3 }, 'x-rcpgw')]).size).toBe(4);
    expect(canonicalRequest({ query: 'q', _meta: { 'x-rcpgw': null } }, 'x-rcpgw')).not.toBe(canonicalRequest({ query: 'q' }, 'x-rcpgw'));
    // The options' separator never occurs inside canonical JSON, whatever the params hold.
    expect(canonicalRequest({ query: 'a\nb', 'x\ny': ['\n'] }, 'x-rcpgw')).not.toContain('\n');
    // What the legacy fingerprint confused, and still does for the version 1 cursors it opens.
    expect(legacyRequestFingerprint({ query: 'q', k: 3, '_meta.x-rcpgw': options }, 'x-rcpgw')).toBe(
      legacyRequestFingerprint({ query: 'q', k: 3, _meta: { 'x-rcpgw': options } }, 'x-rcpgw'),
    );
  });

  it('seals the same payload bytes as `{ v: 1, ...payload }`', () => {
    const p = payload();
    const token = sealCursor(p, key);
    const body = token.slice(0, token.indexOf('.'));
    expect(Buffer.from(body, 'base64url').toString('utf8')).toBe(JSON.stringify({ v: 1, ...p }));
  });
});
