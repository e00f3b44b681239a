/**
 * Native digests for pagination cursors on Node: node:crypto's HMAC and SHA-256 and Buffer's
 * base64url, byte for byte what the portable ones give (test/unit/portable-crypto.test.ts), at a
 * third of their cost per cursor (docs/performance.md, "CPU diet"). Installed once at start by
 * the CLI; the core keeps the portable ones everywhere else (edge runtimes, tests in-process).
 */
import { createHmac, hash } from 'node:crypto';
import type { CursorDigests } from '../../core/federation/cursor.js';

export const nodeCursorDigests: CursorDigests = {
  encodeText: (text) => Buffer.from(text, 'utf8').toString('base64url'),
  mac: (key, text, bytes) => createHmac('sha256', key).update(text, 'utf8').digest().subarray(0, bytes).toString('base64url'),
  // One-shot: no Hash object per fingerprint (half the cost of createHash().update().digest()).
  digest: (text) => hash('sha256', text, 'base64url'),
};
