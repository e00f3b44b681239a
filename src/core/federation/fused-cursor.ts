/**
 * Compact cursors for fused results (§10): what the gateway issues for the next page of a
 * federated `retrieve` or `graph`. A token is
 *
 *   `2~<method>~<expiry>~<segment>~<offset>~<engine>~<depth>[~<engine>~<depth>…]` "." <tag>
 *
 * with the expiry in ms since the epoch (base 36), and <tag> the first 16 bytes of
 * HMAC-SHA256(key, body "\n" canonical request), base64url. The MAC covers the request the cursor
 * belongs to (cursor.ts `canonicalRequest`: params less `cursor` and per-call `_meta`), so a cursor
 * replayed against other params does not verify, without a fingerprint inside the token.
 *
 * Why a second format: the first one (cursor.ts, version 1) spelled the same position as JSON, in
 * base64url, with a SHA-256 fingerprint of the request inside, and sealing it on every paged answer
 * was a measurable part of the gateway's CPU per request (docs/performance.md, "The compact
 * cursor"). This one is plain text of a fixed grammar and costs one HMAC. Every field is within
 * `[A-Za-z0-9._:/~-]`: method names (§4.1 grammar) and engine ids (config schema) never contain `~`.
 * Version 1 cursors still open (paged-legs.ts), so pages issued before an upgrade keep working.
 *
 * Like version 1 it is signed, not encrypted: it names the method, the engine ids and their
 * depths (docs/security.md).
 */
import { ENGINE_ID } from '../config/engine-schema.js';
import { setOwn } from '../protocol/copy.js';
import { isWellFormedMethodName } from '../protocol/methods.js';
import { cursorMac, expiredCursor, invalidCursor, sameText, type FusedPosition } from './cursor.js';

const FUSED_CURSOR_PREFIX = '2~';

/** What a compact cursor carries besides the request it is bound to. */
export interface FusedCursor {
  method: string;
  /** Expiry, ms since the epoch. */
  expiresAt: number;
  position: FusedPosition;
}

/** Whether `token` claims to be a compact cursor (it still has to verify). */
export function isFusedCursor(token: string): boolean {
  return token.startsWith(FUSED_CURSOR_PREFIX);
}

/** The token for `cursor`, bound to `request` (the canonical request text). */
export function sealFusedCursor(cursor: FusedCursor, request: string, key: Uint8Array): string {
  const { position } = cursor;
  let body = `${FUSED_CURSOR_PREFIX}${cursor.method}~${cursor.expiresAt.toString(36)}~${position.segment}~${position.offset}`;
  for (const engine of position.engines) body += `~${engine}~${position.depth[engine]}`;
  return `${body}.${cursorMac(key, `${body}\n${request}`)}`;
}

const BODY = /^2~[A-Za-z0-9._:/~-]+$/;
const COUNT = /^(?:0|[1-9][0-9]{0,8})$/;
const EXPIRY = /^[0-9a-z]{1,11}$/;

/**
 * Verify and decode a compact cursor for `expect.request`; throws -32602 (forged, altered,
 * issued under another key, or for other params) or -32015 (expired, §12).
 */
export function openFusedCursor(
  token: string,
  key: Uint8Array,
  expect: { method: string; request: string },
  now = Date.now(),
): FusedCursor {
  const dot = token.lastIndexOf('.');
  const body = token.slice(0, dot);
  if (dot <= 0 || !BODY.test(body)) throw invalidCursor('not a cursor this gateway issued');
  if (!sameText(token.slice(dot + 1), cursorMac(key, `${body}\n${expect.request}`))) {
    throw invalidCursor(
      'cursor does not verify for this request (altered, issued under another key, or for different params: repeat the request exactly, adding only the cursor)',
    );
  }
  const cursor = parseBody(body.split('~'));
  if (!cursor) throw invalidCursor('cursor payload is malformed');
  if (now > cursor.expiresAt) throw expiredCursor();
  if (cursor.method !== expect.method) throw invalidCursor('cursor belongs to a different method');
  return cursor;
}

/** The fields after the version: method, expiry, segment, offset, then engine/depth pairs. */
function parseBody(fields: string[]): FusedCursor | undefined {
  const [, method, expiry, segment, offset] = fields;
  if (fields.length < 7 || fields.length % 2 === 0) return undefined;
  if (!isWellFormedMethodName(method!) || !EXPIRY.test(expiry!) || !COUNT.test(segment!) || !COUNT.test(offset!)) return undefined;
  const engines: string[] = [];
  const depth: Record<string, number> = {};
  for (let i = 5; i < fields.length; i += 2) {
    const engine = fields[i]!;
    const engineDepth = fields[i + 1]!;
    if (!ENGINE_ID.test(engine) || !COUNT.test(engineDepth) || engineDepth === '0' || Object.hasOwn(depth, engine)) return undefined;
    engines.push(engine);
    setOwn(depth, engine, Number(engineDepth)); // any config id, `__proto__` included
  }
  const expiresAt = parseInt(expiry!, 36);
  if (!Number.isSafeInteger(expiresAt)) return undefined;
  return {
    method: method!,
    expiresAt,
    position: { kind: 'fused', engines, depth, segment: Number(segment), offset: Number(offset) },
  };
}
