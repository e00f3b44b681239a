/**
 * Native digests for pagination cursors on Node: node:crypto's SHA-256 and Buffer's base64url,
 * byte for byte what the portable ones give (test/unit/portable-crypto.test.ts), at a fraction of
 * their cost per cursor (docs/performance.md, "CPU diet"). Installed once at start by the CLI; the
 * core keeps the portable ones everywhere else (edge runtimes, tests in-process).
 */
import { createHmac, hash } from 'node:crypto';
import type { CursorDigests } from '../../core/federation/cursor.js';

/** SHA-256's block size: HMAC pads its key to one block (RFC 2104). */
const BLOCK = 64;
const DIGEST = 32;
/** Texts up to this many UTF-16 units (at most 3 UTF-8 bytes each) fit the inner buffer; cursors are a few hundred. */
const INLINE_CHARS = 2048;

/** `(K ⊕ ipad) ‖ text` and `(K ⊕ opad) ‖ inner digest`, the key blocks written once per key. */
const inner = Buffer.alloc(BLOCK + INLINE_CHARS * 3);
const outer = Buffer.alloc(BLOCK + DIGEST);
const tag = Buffer.alloc(DIGEST);
let keyed: Uint8Array | undefined;

function useKey(key: Uint8Array): void {
  // RFC 2104: a key longer than the block is hashed first; a shorter one is padded with zeros.
  const block = Buffer.alloc(BLOCK);
  block.set(key.length > BLOCK ? hash('sha256', key, 'buffer') : key);
  for (let i = 0; i < BLOCK; i++) {
    inner[i] = block[i]! ^ 0x36;
    outer[i] = block[i]! ^ 0x5c;
  }
  keyed = key;
}

/**
 * HMAC-SHA256 by its definition, H((K ⊕ opad) ‖ H((K ⊕ ipad) ‖ text)), from two one-shot hashes
 * over buffers reused across calls. node's Hmac object costs 3.5–5.5 µs to set up per cursor (its
 * OpenSSL context); this is 1.4 µs, and the same bytes. Digests travel as latin1 strings (node's
 * 'binary'), since a one-shot hash returning a Buffer costs more than the hash itself.
 */
function hmacSha256(key: Uint8Array, text: string, bytes: number): string {
  if (text.length > INLINE_CHARS) {
    // Longer than any cursor this gateway issues (a client's forgery attempt, say): the Hmac object.
    return createHmac('sha256', key).update(text, 'utf8').digest().subarray(0, bytes).toString('base64url');
  }
  // The key is the caller's, kept as is for the life of the process (cursorKey); keyed blocks follow it by identity.
  if (keyed !== key) useKey(key);
  const length = inner.write(text, BLOCK, 'utf8');
  outer.write(hash('sha256', inner.subarray(0, BLOCK + length), 'binary'), BLOCK, DIGEST, 'latin1');
  tag.write(hash('sha256', outer, 'binary'), 0, DIGEST, 'latin1');
  return tag.toString('base64url', 0, Math.min(bytes, DIGEST));
}

export const nodeCursorDigests: CursorDigests = {
  encodeText: (text) => Buffer.from(text, 'utf8').toString('base64url'),
  mac: hmacSha256,
  // One-shot: no Hash object per fingerprint (half the cost of createHash().update().digest()).
  digest: (text) => hash('sha256', text, 'base64url'),
};
