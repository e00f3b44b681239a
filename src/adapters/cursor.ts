/**
 * Pagination cursors (§10): the next offset, bound to the request that produced it, so a cursor
 * replayed with another query or filter is refused (-32602) instead of paging a different list.
 */
import { createHash } from 'node:crypto';
import { RcpError } from '../core/protocol/errors.js';

export function requestFingerprint(parts: unknown): string {
  return createHash('sha256').update(JSON.stringify(parts)).digest('base64url').slice(0, 22);
}

export function encodeCursor(offset: number, fingerprint: string): string {
  return Buffer.from(JSON.stringify({ o: offset, f: fingerprint })).toString('base64url');
}

export function decodeCursor(cursor: string, fingerprint: string): number {
  let decoded: unknown;
  try {
    decoded = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    decoded = undefined;
  }
  const fields = typeof decoded === 'object' && decoded !== null ? (decoded as Record<string, unknown>) : {};
  if (!Number.isSafeInteger(fields.o) || (fields.o as number) < 0)
    throw RcpError.invalidParams('cursor', 'not a cursor this engine issued');
  if (fields.f !== fingerprint) throw RcpError.invalidParams('cursor', 'the cursor belongs to another query or filter');
  return fields.o as number;
}
