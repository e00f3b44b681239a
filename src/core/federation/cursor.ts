/**
 * Gateway pagination cursors (§10), pure: encode, sign, verify. This module holds the keys, the
 * digests, the request binding and version 1 of the token; fused results' pages are now issued in
 * the compact version 2 (fused-cursor.ts), and version 1 is what routed results' cursors use and
 * what fused cursors issued before it still are. A version 1 cursor is
 * `base64url(JSON payload) "." base64url(HMAC-SHA256(key, payload))[:16 bytes]`, so it is opaque
 * to the client in use (though not secret: the payload is signed, not encrypted, and decodes to
 * the method, a request fingerprint, the engine ids and per-engine depths — see Security), carries everything the next page needs (no server-side state: any replica
 * holding the same key can serve it), and cannot be forged or altered: a bad signature or a
 * malformed payload is -32602 (`data.field: "cursor"`), an expired one -32015 (§12: "an expired
 * `cursor`"). The payload also carries a fingerprint of the request it belongs to, so a cursor
 * replayed against different params is rejected rather than serving an unrelated page.
 */
import { hmac } from '@noble/hashes/hmac.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { randomBytes } from '@noble/hashes/utils.js';
import { base64urlnopad } from '@scure/base';
import { setOwn } from '../protocol/copy.js';
import { ErrorCode, RcpError } from '../protocol/errors.js';
import { isJsonObject, type JsonObject } from '../protocol/jsonrpc.js';

const VERSION = 1;
const MAC_BYTES = 16;

/** Where the next page of a fused result starts (federated `retrieve` / `graph`). */
export interface FusedPosition {
  kind: 'fused';
  /** Engines that formed the first page; later pages use exactly these (consistent fusion). */
  engines: string[];
  /** Per-engine depth of one window segment (the first page's per-engine `k`). */
  depth: Record<string, number>;
  /** Current window segment (segment s fuses per-engine ranks [0, depth·2^s), paging.ts). */
  segment: number;
  /** Rank inside the segment's new hits where the next page starts. */
  offset: number;
}

/** The next page of a result one engine produced (routed methods): that engine's own cursor. */
export interface RoutedPosition {
  kind: 'routed';
  engine: string;
  cursor: string;
}

export type CursorPosition = FusedPosition | RoutedPosition;

export interface CursorPayload {
  /** The method the cursor belongs to. */
  method: string;
  /** Fingerprint of the request params (minus `cursor` and transport `_meta`). */
  fingerprint: string;
  /** Expiry, ms since the epoch. */
  expiresAt: number;
  position: CursorPosition;
}

/** The signing key: the configured secret, else one random key per process (replicas need a shared secret). */
export function cursorKey(secret: string | undefined): Uint8Array {
  if (secret === undefined) return processKey();
  // The same secret comes back on every paged answer: encoded once, so the keyed MAC below is reused too.
  if (lastSecret?.secret !== secret) lastSecret = { secret, key: new TextEncoder().encode(secret) };
  return lastSecret.key;
}

let lastSecret: { secret: string; key: Uint8Array } | undefined;

let randomKey: Uint8Array | undefined;
function processKey(): Uint8Array {
  randomKey ??= randomBytes(32);
  return randomKey;
}

const utf8 = new TextEncoder();
const fromUtf8 = new TextDecoder('utf-8', { fatal: true }); // strict: invalid UTF-8 is not a cursor

/**
 * The hashing and encoding behind cursors and fingerprints. The default is portable JavaScript
 * (@noble/hashes, @scure/base: any runtime); a runtime with native ones installs them at start
 * (`useCursorDigests`, Node: node/crypto/cursor-digests.ts), and they must give the same bytes,
 * so cursors stay valid across runtimes and versions (test/unit/portable-crypto.test.ts).
 */
export interface CursorDigests {
  /** base64url, unpadded, of the UTF-8 bytes of `text`. */
  encodeText(text: string): string;
  /** The first `bytes` bytes of HMAC-SHA256(key, UTF-8 of `text`), base64url unpadded. */
  mac(key: Uint8Array, text: string, bytes: number): string;
  /** SHA-256 of the UTF-8 of `text`, base64url unpadded. */
  digest(text: string): string;
}

let keyed: { key: Uint8Array; state: ReturnType<typeof hmac.create> } | undefined;

export const portableCursorDigests: CursorDigests = {
  encodeText: (text) => base64urlnopad.encode(utf8.encode(text)),
  mac: (key, text, bytes) => {
    // HMAC keyed once per key (its two padded key blocks hashed once) and cloned per cursor.
    if (keyed?.key !== key) keyed = { key, state: hmac.create(sha256, key) };
    return base64urlnopad.encode(keyed.state.clone().update(utf8.encode(text)).digest().subarray(0, bytes));
  },
  digest: (text) => base64urlnopad.encode(sha256(utf8.encode(text))),
};

let digests = portableCursorDigests;

/** Install native digests (same bytes as the portable ones, fewer microseconds per cursor). */
export function useCursorDigests(native: CursorDigests): void {
  digests = native;
}

// The portable hash code is JavaScript: compile it at startup, not inside the first paginated request's deadline.
portableCursorDigests.mac(new Uint8Array(32), 'warm-up', MAC_BYTES);

/** Constant-time comparison: the time taken does not reveal how many leading characters matched. */
export function sameText(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return diff === 0;
}

/** base64url without padding; undefined for text that is not base64url. */
function decodeBase64url(text: string): Uint8Array | undefined {
  try {
    return base64urlnopad.decode(text);
  } catch {
    return undefined;
  }
}

/** A cursor's tag: the first 16 bytes of HMAC-SHA256(key, UTF-8 of `text`), base64url (fused-cursor.ts). */
export function cursorMac(key: Uint8Array, text: string): string {
  return digests.mac(key, text, MAC_BYTES);
}

export function sealCursor(payload: CursorPayload, key: Uint8Array): string {
  // The payload's fields in their order after the version (what `{ v, ...payload }` gives), built as one literal.
  const sealed = {
    v: VERSION,
    method: payload.method,
    fingerprint: payload.fingerprint,
    expiresAt: payload.expiresAt,
    position: payload.position,
  };
  const body = digests.encodeText(JSON.stringify(sealed));
  return `${body}.${digests.mac(key, body, MAC_BYTES)}`;
}

/** -32602 on `cursor`: forged, altered, foreign or malformed. */
export function invalidCursor(detail: string): RcpError {
  return RcpError.invalidParams('cursor', detail);
}

/** -32015 (§12: "an expired `cursor`"): the client restarts from the first page. */
export function expiredCursor(): RcpError {
  return new RcpError(ErrorCode.NotFound, 'cursor expired: restart pagination without a cursor', {
    field: 'cursor',
    detail: 'the cursor is past its expiry',
    retryable: false,
  });
}

/** Verify and decode; throws -32602 (forged, corrupted, foreign) or -32015 (expired). */
export function openCursor(
  token: string,
  key: Uint8Array,
  expect: { method: string; fingerprint: string },
  now = Date.now(),
): CursorPayload {
  const dot = token.indexOf('.');
  if (dot <= 0 || dot !== token.lastIndexOf('.')) throw invalidCursor('not a cursor this gateway issued');
  const body = token.slice(0, dot);
  // The MAC is compared as the exact text this gateway would issue (its canonical encoding), not
  // after a lenient decode: only one spelling of a cursor verifies.
  if (!sameText(token.slice(dot + 1), digests.mac(key, body, MAC_BYTES))) {
    throw invalidCursor('cursor signature does not verify (forged, corrupted, or issued under another key)');
  }
  let decoded: unknown;
  try {
    const bytes = decodeBase64url(body);
    // Strict: the body must be the canonical encoding of its bytes, as sealed.
    if (!bytes || base64urlnopad.encode(bytes) !== body) throw new Error('not canonical base64url');
    decoded = JSON.parse(fromUtf8.decode(bytes));
  } catch {
    throw invalidCursor('cursor payload is not readable');
  }
  const payload = parsePayload(decoded);
  if (!payload) throw invalidCursor('cursor payload is malformed');
  if (now > payload.expiresAt) throw expiredCursor();
  if (payload.method !== expect.method || payload.fingerprint !== expect.fingerprint) {
    throw invalidCursor('cursor belongs to a different request (repeat the request exactly, adding only the cursor)');
  }
  return payload;
}

function isCount(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}

function parsePayload(value: unknown): CursorPayload | undefined {
  if (!isJsonObject(value) || value.v !== VERSION) return undefined;
  const { method, fingerprint, expiresAt, position } = value;
  if (typeof method !== 'string' || typeof fingerprint !== 'string' || !isCount(expiresAt) || !isJsonObject(position)) return undefined;
  if (position.kind === 'routed') {
    if (typeof position.engine !== 'string' || typeof position.cursor !== 'string') return undefined;
    return { method, fingerprint, expiresAt, position: { kind: 'routed', engine: position.engine, cursor: position.cursor } };
  }
  if (position.kind !== 'fused') return undefined;
  const { engines, depth, segment, offset } = position;
  if (!Array.isArray(engines) || !engines.every((e) => typeof e === 'string') || !isJsonObject(depth)) return undefined;
  if (!isCount(segment) || !isCount(offset)) return undefined;
  const depths: Record<string, number> = {};
  for (const engine of engines as string[]) {
    const d = depth[engine];
    if (!isCount(d) || d === 0) return undefined;
    setOwn(depths, engine, d); // engine ids are config ids: `__proto__` is one
  }
  return { method, fingerprint, expiresAt, position: { kind: 'fused', engines: engines as string[], depth: depths, segment, offset } };
}

/**
 * What makes a request the same request, as text: its params minus `cursor` and minus per-call
 * `_meta` (progress token, deadline, trace, federation path), in canonical JSON, then — when the
 * request has them — the gateway's own `_meta["x-rcpgw"]` options, which change the fusion, after
 * a newline. Canonical JSON has no raw newline (JSON.stringify escapes it), so nothing in the
 * params can pass for the options: a param named `_meta.x-rcpgw` is a param like any other.
 * Compact cursors are bound to this text (fused-cursor.ts), routed cursors carry its digest.
 */
export function canonicalRequest(params: JsonObject, vendorKey: string): string {
  const vendor = gatewayOptionsOf(params, vendorKey);
  const request = canonicalObject(requestKeys(params), (key) => params[key]);
  return vendor === undefined ? request : `${request}\n${canonicalJson(vendor)}`;
}

/** The params that make a request the same request: all but `cursor` and `_meta`. */
function requestKeys(params: JsonObject): string[] {
  return definedKeys(params, (key) => key !== 'cursor' && key !== '_meta');
}

/** The gateway's own options in the request's `_meta`, if any. */
function gatewayOptionsOf(params: JsonObject, vendorKey: string): unknown {
  const meta = params._meta;
  return isJsonObject(meta) ? meta[vendorKey] : undefined;
}

/** A stable digest of `canonicalRequest`, carried inside version 1 cursors (routed results). */
export function requestFingerprint(params: JsonObject, vendorKey: string): string {
  return fingerprintOf(canonicalRequest(params, vendorKey));
}

/**
 * The fingerprint fused version 1 cursors were issued with, before the compact format: the
 * options folded into the params under the key `_meta.<vendorKey>`, which a param of that name
 * could stand in for. Only read, to open such cursors while they last (`cursorTtlMs`).
 */
export function legacyRequestFingerprint(params: JsonObject, vendorKey: string): string {
  const vendor = gatewayOptionsOf(params, vendorKey);
  const vendorField = `_meta.${vendorKey}`;
  const keys = requestKeys(params);
  if (vendor === undefined) return fingerprintOf(canonicalObject(keys, (key) => params[key]));
  if (!keys.includes(vendorField)) keys.push(vendorField);
  return fingerprintOf(canonicalObject(keys, (key) => (key === vendorField ? vendor : params[key])));
}

/** The fingerprint of a canonical request text. */
function fingerprintOf(request: string): string {
  return digests.digest(request).slice(0, 22);
}

/** JSON with object keys sorted, so equal values always hash equally. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) {
    let out = '[';
    for (let i = 0; i < value.length; i++) out += `${i > 0 ? ',' : ''}${canonicalJson(value[i])}`;
    return `${out}]`;
  }
  if (isJsonObject(value)) return canonicalObject(definedKeys(value), (key) => value[key]);
  return JSON.stringify(value) ?? 'null';
}

/** Own keys whose value is not undefined (and that `keep` keeps). */
function definedKeys(object: JsonObject, keep?: (key: string) => boolean): string[] {
  const keys: string[] = [];
  for (const key of Object.keys(object)) if (object[key] !== undefined && (keep === undefined || keep(key))) keys.push(key);
  return keys;
}

/** `{"key":<canonical value>,…}` over `keys` in sorted order (sorts `keys` in place). */
function canonicalObject(keys: string[], valueOf: (key: string) => unknown): string {
  keys.sort();
  let out = '{';
  for (let i = 0; i < keys.length; i++) out += `${i > 0 ? ',' : ''}${JSON.stringify(keys[i])}:${canonicalJson(valueOf(keys[i]!))}`;
  return `${out}}`;
}
