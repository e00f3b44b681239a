/**
 * Compact fused-result cursors (§10, src/core/federation/fused-cursor.ts): signed, expiring,
 * bound to the request they were issued for by their MAC, and refused with the right §12 code
 * when altered, foreign, expired or replayed against other params.
 */
import { describe, expect, it } from 'vitest';
import { canonicalRequest, cursorKey, cursorMac } from '../../src/core/federation/cursor.js';
import { isFusedCursor, openFusedCursor, sealFusedCursor, type FusedCursor } from '../../src/core/federation/fused-cursor.js';
import { RcpError } from '../../src/core/protocol/errors.js';

const key = cursorKey('a-shared-secret-of-some-length');
const request = canonicalRequest({ query: 'q', k: 3 }, 'x-rcpgw');
const cursor = (over: Partial<FusedCursor> = {}): FusedCursor => ({
  method: 'retrieve',
  expiresAt: 2_000_000_000_000,
  position: { kind: 'fused', engines: ['a', 'b.2:x-y_z'], depth: { a: 6, 'b.2:x-y_z': 4 }, segment: 1, offset: 2 },
  ...over,
});
const expect1 = { method: 'retrieve', request };

function rejection(fn: () => unknown): { code: number; data: Record<string, unknown> | undefined; message: string } {
  try {
    fn();
  } catch (err) {
    if (err instanceof RcpError) return { code: err.code, data: err.data, message: err.message };
    throw err;
  }
  throw new Error('expected a rejection');
}

describe('compact fused cursors', () => {
  it('round-trips a position, in a URL-safe token that names no secret', () => {
    const token = sealFusedCursor(cursor(), request, key);
    expect(token).toMatch(/^2~[A-Za-z0-9._:/~-]+\.[A-Za-z0-9_-]{22}$/);
    expect(isFusedCursor(token)).toBe(true);
    expect(token).not.toContain('a-shared-secret');
    expect(openFusedCursor(token, key, expect1, 1_000)).toEqual(cursor());
  });

  it('spells its fields in a fixed order: method, expiry (base 36), segment, offset, engine/depth pairs', () => {
    const token = sealFusedCursor(cursor(), request, key);
    expect(token.slice(0, token.lastIndexOf('.'))).toBe(`2~retrieve~${(2_000_000_000_000).toString(36)}~1~2~a~6~b.2:x-y_z~4`);
  });

  it('is bound to the canonical request: key order does not matter, any other param does', () => {
    const token = sealFusedCursor(cursor(), request, key);
    const reordered = canonicalRequest({ k: 3, query: 'q', cursor: token, _meta: { progressToken: 1 } }, 'x-rcpgw');
    expect(openFusedCursor(token, key, { method: 'retrieve', request: reordered }, 1_000)).toEqual(cursor());
    for (const params of [
      { query: 'q', k: 4 },
      { query: 'q2', k: 3 },
      { query: 'q', k: 3, _meta: { 'x-rcpgw': { fusion: 'weighted' } } },
    ]) {
      const other = canonicalRequest(params, 'x-rcpgw');
      const r = rejection(() => openFusedCursor(token, key, { method: 'retrieve', request: other }, 1_000));
      expect(r.code).toBe(-32602);
      expect(r.data?.field).toBe('cursor');
      expect(r.message).toMatch(/different params/);
    }
  });

  it('refuses a cursor of another method, key, or with any character changed', () => {
    const token = sealFusedCursor(cursor(), request, key);
    expect(rejection(() => openFusedCursor(token, key, { method: 'graph', request }, 1_000)).code).toBe(-32602);
    expect(rejection(() => openFusedCursor(token, cursorKey('another-secret-entirely-0123'), expect1, 1_000)).code).toBe(-32602);
    for (let i = 2; i < token.length; i++) {
      const changed = `${token.slice(0, i)}${token[i] === '1' ? '2' : '1'}${token.slice(i + 1)}`;
      const r = rejection(() => openFusedCursor(changed, key, expect1, 1_000));
      expect(r.code).toBe(-32602);
      expect(r.data?.field).toBe('cursor');
    }
  });

  it('is -32015 once expired, and refuses a body that is not its grammar before reading it', () => {
    const token = sealFusedCursor(cursor({ expiresAt: 5_000 }), request, key);
    expect(openFusedCursor(token, key, expect1, 5_000).expiresAt).toBe(5_000);
    const r = rejection(() => openFusedCursor(token, key, expect1, 5_001));
    expect(r.code).toBe(-32015);
    expect(r.data).toMatchObject({ field: 'cursor', retryable: false });
    for (const bad of ['2~', '2~.', '.abc', '2~a b.x', '2~retrieve~1~0~0~a~1', `2~x\n.${'A'.repeat(22)}`, 'x'.repeat(5000)]) {
      expect(rejection(() => openFusedCursor(bad, key, expect1, 1_000)).code).toBe(-32602);
    }
  });

  it('refuses a signed body outside the grammar (only the parser stands between it and the pager)', () => {
    // Signed as the sealer signs: a body that verifies but that this gateway would never issue.
    const signed = (body: string): string => `${body}.${cursorMac(key, `${body}\n${request}`)}`;
    expect(openFusedCursor(signed('2~retrieve~zz~1~2~a~6'), key, expect1, 1_000).position.depth).toEqual({ a: 6 });
    for (const body of [
      '2~retrieve~zz~1~2~a~0',
      '2~retrieve~zz~1~2~a~6~a~4',
      '2~Retrieve~zz~1~2~a~6',
      '2~retrieve~zz~01~2~a~6',
      '2~retrieve~zz~1~2~a',
      '2~retrieve~zzzzzzzzzzzz~1~2~a~6',
    ]) {
      const r = rejection(() => openFusedCursor(signed(body), key, expect1, 1_000));
      expect(r.code).toBe(-32602);
      expect(r.message).toMatch(/malformed/);
    }
  });

  it('keeps an engine id that names an Object.prototype member as a plain key', () => {
    // A literal `{ __proto__: 3 }` would set the prototype: the depths are built as the pager builds them.
    const depth = Object.create(null) as Record<string, number>;
    depth['__proto__'] = 3;
    depth['constructor'] = 5;
    const odd = cursor({ position: { kind: 'fused', engines: ['__proto__', 'constructor'], depth, segment: 0, offset: 0 } });
    const opened = openFusedCursor(sealFusedCursor(odd, request, key), key, expect1, 1_000);
    expect(opened.position.engines).toEqual(['__proto__', 'constructor']);
    expect(Object.hasOwn(opened.position.depth, '__proto__')).toBe(true);
    expect(opened.position.depth['__proto__']).toBe(3);
    expect(opened.position.depth['constructor']).toBe(5);
  });
});
