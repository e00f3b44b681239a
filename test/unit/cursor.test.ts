/**
 * Gateway pagination cursors (§10, src/federation/cursor.ts): signed, opaque, expiring, bound
 * to the request they were issued for.
 */
import { describe, expect, it } from 'vitest';
import {
  canonicalJson,
  cursorKey,
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
