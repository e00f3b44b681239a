/**
 * Interleaving attribution without shared memory: the answer to an interleaved request carries a
 * compact signed token (in its `_meta["x-rcpgw"].attribution`) naming the experiment, the two
 * arms, which team contributed each hit, and when it was issued. A client echoes the token in the
 * `_meta` of its §7.16 `feedback`; any replica holding the same secret can then credit the right
 * arm. A token that does not verify, or is older than the TTL, is refused with -32602.
 *
 * Wire form: `base64url(JSON claims) "." base64url(HMAC-SHA256(secret, first part))`. The MAC is
 * over the exact encoded bytes, so no canonical JSON is needed; it is compared in constant time.
 */
import { hmac } from '@noble/hashes/hmac.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { utf8ToBytes } from '@noble/hashes/utils.js';
import { RcpError } from '../protocol/errors.js';
import { isJsonObject } from '../protocol/jsonrpc.js';
import { creditClicks, type Credit, type Team } from './interleave.js';

export const ATTRIBUTION_FIELD = '_meta.x-rcpgw.attribution';
/** How far in the future an issued-at may lie (clock skew between replicas). */
const MAX_SKEW_MS = 60_000;

export interface AttributionClaims {
  experiment: string;
  /** The arms of teams A and B, in that order. */
  arms: [string, string];
  /** Hit id → team. */
  teams: Map<string, Team>;
  /** Milliseconds since the epoch. */
  issuedAt: number;
  /** Hit id → the engines that returned it (where §7.16 feedback is forwarded); optional. */
  sources?: Map<string, readonly string[]>;
  /** Makes each impression's token unique (two users can be shown the same list in the same millisecond). */
  nonce?: string;
}

interface WireClaims {
  v: 1;
  e: string;
  a: [string, string];
  /** Hit ids of team A, then of team B. */
  h: [string[], string[]];
  t: number;
  /** Engine ids the hits came from, named once each … */
  g?: string[];
  /** … and, per hit in `h` order (team A's, then team B's), indexes into `g`. */
  s?: number[][];
  /** The impression's nonce. */
  n?: string;
}

export function signAttribution(claims: AttributionClaims, secret: string): string {
  const byTeam: [string[], string[]] = [[], []];
  for (const [id, team] of claims.teams) byTeam[team === 'A' ? 0 : 1].push(id);
  const wire: WireClaims = { v: 1, e: claims.experiment, a: claims.arms, h: byTeam, t: claims.issuedAt };
  if (claims.sources !== undefined) Object.assign(wire, wireSources(byTeam, claims.sources));
  if (claims.nonce !== undefined) wire.n = claims.nonce;
  const body = toBase64Url(utf8ToBytes(JSON.stringify(wire)));
  return `${body}.${toBase64Url(mac(secret, body))}`;
}

export interface VerifyOptions {
  secret: string;
  ttlMs: number;
  /** Current time in ms since the epoch (default `Date.now()`). */
  now?: number;
}

/** The token's claims, or -32602 when it is malformed, forged, stale or issued in the future. */
export function verifyAttribution(token: unknown, options: VerifyOptions): AttributionClaims {
  if (typeof token !== 'string') throw refuse('expected the attribution token string from the answer');
  const dot = token.indexOf('.');
  const body = dot > 0 ? token.slice(0, dot) : '';
  const signatureText = dot > 0 ? token.slice(dot + 1) : '';
  const signature = dot > 0 ? fromBase64Url(signatureText) : undefined;
  // The canonical spelling only: the last base64url character carries spare bits, so four
  // spellings decoded to one signature, and each was credited as its own impression.
  if (signature === undefined || body.length === 0 || toBase64Url(signature) !== signatureText) throw refuse('malformed attribution token');
  if (!constantTimeEqual(signature, mac(options.secret, body))) throw refuse('attribution token signature does not verify');
  const wire = parseClaims(body);
  if (wire === undefined) throw refuse('malformed attribution token');
  const now = options.now ?? Date.now();
  if (wire.t > now + MAX_SKEW_MS) throw refuse('attribution token issued in the future');
  if (now - wire.t > options.ttlMs) throw refuse(`stale attribution token (older than ${options.ttlMs} ms)`);
  const teams = new Map<string, Team>();
  for (const id of wire.h[0]) teams.set(id, 'A');
  for (const id of wire.h[1]) teams.set(id, 'B');
  const claims: AttributionClaims = {
    experiment: wire.e,
    arms: wire.a,
    teams,
    issuedAt: wire.t,
    ...(wire.n !== undefined ? { nonce: wire.n } : {}),
  };
  if (wire.g !== undefined && wire.s !== undefined) {
    const engines = wire.g;
    const sources = new Map<string, string[]>();
    [...wire.h[0], ...wire.h[1]].forEach((id, i) =>
      sources.set(
        id,
        (wire.s![i] ?? []).flatMap((j) => engines[j] ?? []),
      ),
    );
    claims.sources = sources;
  }
  return claims;
}

/** The compact form of hit → engines: an engine table and, per hit, indexes into it. */
function wireSources(byTeam: [string[], string[]], sources: ReadonlyMap<string, readonly string[]>): Pick<WireClaims, 'g' | 's'> {
  const table: string[] = [];
  const index = new Map<string, number>();
  const s = [...byTeam[0], ...byTeam[1]].map((id) =>
    (sources.get(id) ?? []).map((engine) => {
      let i = index.get(engine);
      if (i === undefined) {
        i = table.push(engine) - 1;
        index.set(engine, i);
      }
      return i;
    }),
  );
  return { g: table, s };
}

/** One §7.16 feedback signal, as far as attribution reads it. */
export interface FeedbackSignal {
  hitId: string;
  used?: boolean;
  cited?: boolean;
  helpful?: boolean;
  reward?: number;
}

/**
 * A signal credits its hit's team when it says the hit was used, cited or helpful, or carries a
 * positive reward. Negative signals (`helpful: false`, reward ≤ 0) and ids the token does not name
 * credit nobody.
 */
export function creditFeedback(claims: AttributionClaims, signals: readonly FeedbackSignal[]): Credit {
  const positive = signals.filter((s) => s.used === true || s.cited === true || s.helpful === true || (s.reward ?? 0) > 0);
  return creditClicks(
    claims.teams,
    positive.map((s) => s.hitId),
  );
}

function refuse(detail: string): RcpError {
  return RcpError.invalidParams(ATTRIBUTION_FIELD, detail);
}

function mac(secret: string, body: string): Uint8Array {
  return hmac(sha256, utf8ToBytes(secret), utf8ToBytes(body));
}

/** Compares every byte whatever the first difference, so timing does not reveal a prefix match. */
export function constantTimeEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a[i]! ^ b[i]!;
  return diff === 0;
}

function parseClaims(body: string): WireClaims | undefined {
  const bytes = fromBase64Url(body);
  if (bytes === undefined) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes));
  } catch {
    return undefined;
  }
  if (!isJsonObject(value) || value.v !== 1 || typeof value.e !== 'string' || typeof value.t !== 'number' || !Number.isFinite(value.t))
    return undefined;
  const arms = value.a;
  const hits = value.h;
  const strings = (x: unknown): x is string[] => Array.isArray(x) && x.every((s) => typeof s === 'string');
  if (!Array.isArray(arms) || arms.length !== 2 || !strings(arms)) return undefined;
  if (!Array.isArray(hits) || hits.length !== 2 || !strings(hits[0]) || !strings(hits[1])) return undefined;
  const wire: WireClaims = { v: 1, e: value.e, a: [arms[0]!, arms[1]!], h: [hits[0], hits[1]], t: value.t };
  const indexes = (x: unknown): x is number[][] => Array.isArray(x) && x.every((l) => Array.isArray(l) && l.every(Number.isInteger));
  if (strings(value.g) && indexes(value.s)) Object.assign(wire, { g: value.g, s: value.s });
  if (typeof value.n === 'string') wire.n = value.n;
  return wire;
}

/** 64 random bits, base64url (11 characters): an impression nonce. */
export function impressionNonce(): string {
  return toBase64Url(crypto.getRandomValues(new Uint8Array(8)));
}

// base64url with the runtime's btoa/atob, so this module runs anywhere (no Buffer).
function toBase64Url(bytes: Uint8Array): string {
  let binary = '';
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

function fromBase64Url(text: string): Uint8Array | undefined {
  if (!/^[A-Za-z0-9_-]*$/.test(text)) return undefined;
  try {
    const binary = atob(text.replace(/-/g, '+').replace(/_/g, '/'));
    return Uint8Array.from(binary, (c) => c.charCodeAt(0));
  } catch {
    return undefined;
  }
}
