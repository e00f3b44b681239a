/**
 * The core hashes with @noble/hashes and draws randomness from getRandomValues (runtime-neutral);
 * what it produces must equal what node:crypto produced before, so cursors and fingerprints
 * issued by an earlier version, or by a replica running another version, stay valid.
 */
import { createHash, createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  cursorKey,
  openCursor,
  portableCursorDigests,
  requestFingerprint,
  sealCursor,
  useCursorDigests,
  type CursorPayload,
} from '../../src/core/federation/cursor.js';
import { nodeCursorDigests } from '../../src/node/crypto/cursor-digests.js';
import { dedupKey } from '../../src/core/federation/fusion/dedup.js';
import { traceContext } from '../../src/core/protocol/trace.js';

const SECRET = 'a-shared-secret-of-some-length';

/** A cursor sealed exactly as the node:crypto implementation did. */
function nodeSealed(payload: CursorPayload): string {
  const body = Buffer.from(JSON.stringify({ v: 1, ...payload }), 'utf8').toString('base64url');
  const mac = createHmac('sha256', Buffer.from(SECRET)).update(body).digest().subarray(0, 16);
  return `${body}.${mac.toString('base64url')}`;
}

describe('portable hashing matches node:crypto', () => {
  const params = { query: 'naïve café', k: 3, filter: { year: { gte: 1960 } } };
  const fingerprint = requestFingerprint(params, 'x-rcpgw');
  const payload: CursorPayload = {
    method: 'retrieve',
    fingerprint,
    expiresAt: 2_000_000_000_000,
    position: { kind: 'fused', engines: ['a', 'ü'], depth: { a: 6, ü: 4 }, segment: 1, offset: 2 },
  };

  it('seals cursors byte for byte as before, and opens ones sealed before', () => {
    expect(sealCursor(payload, cursorKey(SECRET))).toBe(nodeSealed(payload));
    expect(openCursor(nodeSealed(payload), cursorKey(SECRET), { method: 'retrieve', fingerprint }, 1_000)).toEqual(payload);
  });

  it('fingerprints requests as before', () => {
    const canonical = '{"filter":{"year":{"gte":1960}},"k":3,"query":"naïve café"}';
    expect(fingerprint).toBe(createHash('sha256').update(canonical).digest('base64url').slice(0, 22));
  });

  it('keys content-hash dedup as before', () => {
    const text = '  The  same\ntext ünïcode ';
    const expected = `sha1:${createHash('sha1').update('The same text ünïcode').digest('base64url')}`;
    expect(dedupKey({ id: 'x', score: 1, text }, 'content-hash')).toBe(expected);
  });
});

describe('native cursor digests (what the CLI installs on Node) give the portable bytes', () => {
  // 2048 and 2049 units: either side of the native MAC's inline buffer; 'é' three times longer in UTF-8 than 'x'.
  const texts = [
    '',
    'a',
    'naïve café ü',
    'x'.repeat(239),
    '\u{1F600} emoji',
    'lone \uD800 surrogate',
    '{"k":3,"query":"q"}',
    '€'.repeat(2048),
    'x'.repeat(2049),
  ];
  // Empty, shorter than SHA-256's 64-byte block, exactly one block, longer (hashed first).
  const keys = [cursorKey(SECRET), new Uint8Array(0), new Uint8Array(64).fill(200), new Uint8Array(100).fill(9)];

  it('encode, MAC and digest each text identically', () => {
    for (const text of texts) {
      expect(nodeCursorDigests.encodeText(text), text).toBe(portableCursorDigests.encodeText(text));
      expect(nodeCursorDigests.digest(text), text).toBe(portableCursorDigests.digest(text));
      for (const key of keys) expect(nodeCursorDigests.mac(key, text, 16), text).toBe(portableCursorDigests.mac(key, text, 16));
    }
  });

  it('MACs equal HMAC-SHA256 when keys alternate between calls and at other lengths', () => {
    const reference = (key: Uint8Array, text: string, bytes: number) =>
      createHmac('sha256', key).update(text, 'utf8').digest().subarray(0, bytes).toString('base64url');
    for (let round = 0; round < 3; round++) {
      for (const key of keys) {
        for (const bytes of [1, 16, 32, 40]) {
          const text = `round ${round} ü`;
          expect(nodeCursorDigests.mac(key, text, bytes)).toBe(reference(key, text, bytes));
        }
      }
    }
  });

  it('cursors and fingerprints made under either open under the other', () => {
    const params = { query: 'naïve café', k: 3 };
    const key = cursorKey(SECRET);
    const make = () => {
      const fingerprint = requestFingerprint(params, 'x-rcpgw');
      const payload: CursorPayload = {
        method: 'retrieve',
        fingerprint,
        expiresAt: 2_000_000_000_000,
        position: { kind: 'fused', engines: ['a', 'ü'], depth: { a: 6, ü: 4 }, segment: 1, offset: 2 },
      };
      return { fingerprint, payload, token: sealCursor(payload, key) };
    };
    const portable = make();
    try {
      useCursorDigests(nodeCursorDigests);
      const native = make();
      expect(native.token).toBe(portable.token);
      expect(native.fingerprint).toBe(portable.fingerprint);
      expect(openCursor(portable.token, key, { method: 'retrieve', fingerprint: native.fingerprint }, 1_000)).toEqual(portable.payload);
      expect(() =>
        openCursor(
          `${portable.token.slice(0, -1)}${portable.token.endsWith('A') ? 'B' : 'A'}`,
          key,
          { method: 'retrieve', fingerprint: native.fingerprint },
          1_000,
        ),
      ).toThrow(/signature/);
    } finally {
      useCursorDigests(portableCursorDigests);
    }
    expect(openCursor(portable.token, key, { method: 'retrieve', fingerprint: portable.fingerprint }, 1_000)).toEqual(portable.payload);
  });
});

describe('trace ids from getRandomValues', () => {
  it('generates W3C-shaped, distinct trace and span ids', () => {
    const ids = new Set<string>();
    // Enough draws to wrap the pooled random buffer several times.
    for (let i = 0; i < 1_000; i++) {
      const trace = traceContext({}, undefined);
      expect(trace.traceparent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
      expect(trace.traceparent.slice(3, 35)).toBe(trace.traceId);
      ids.add(trace.traceId);
    }
    expect(ids.size).toBe(1_000);
  });

  it('keeps a client trace id, and sends upstream only a valid W3C one', () => {
    const w3c = '0123456789abcdef0123456789abcdef';
    expect(traceContext({}, w3c)).toMatchObject({ traceId: w3c, traceparent: expect.stringMatching(`^00-${w3c}-[0-9a-f]{16}-01$`) });
    for (const own of ['client-7', '0'.repeat(32), 'ABCDEF0123456789ABCDEF0123456789']) {
      const trace = traceContext({}, own);
      expect(trace.traceId).toBe(own);
      expect(trace.traceparent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
      expect(trace.traceparent.slice(3, 35)).not.toBe(own);
      expect(trace.traceparent.slice(3, 35)).not.toBe('0'.repeat(32));
    }
  });
});
