/**
 * Tenant scoping of federation (§15.6: a multi-tenant server MUST scope retrieval to the caller's
 * authorised corpus and MUST NOT leak it via `catalog/list`). A request runs on the engines its
 * principal may reach and nothing else: fan-out, routing and `catalog/list` see only those, and
 * an engine named outside them is an unknown engine (-32602), never a silent fallback to another.
 */
import type { GatewaySettings } from '../config/schema.js';
import type { Principal } from './principal.js';

/** The engines a principal may reach, in their configured order. */
export function scopeEngines<T extends { id: string }>(engines: readonly T[], principal: Principal | undefined): readonly T[] {
  const allowed = principal?.limits.engines;
  if (allowed === undefined) return engines;
  return engines.filter((engine) => allowed.includes(engine.id));
}

/**
 * Settings as a principal sees them: its `maxK` ceiling, and a cursor key of its own, so a
 * pagination cursor issued to one principal does not verify for another (§10 cursors are
 * bearer tokens; binding them stops a leaked cursor from paging through another tenant's view).
 */
export function scopeSettings(settings: GatewaySettings, principal: Principal | undefined): GatewaySettings {
  if (principal === undefined) return settings;
  const maxK = Math.min(settings.maxK, principal.limits.maxK ?? Infinity);
  // Each field length-prefixed, the tenant too: no two principals share a key, not even ids that
  // differ only by trailing NULs, which HMAC would not tell apart in a key of one block or less
  // (RFC 2104 pads a short key with zero bytes).
  const who = `${lengthPrefixed(principal.via)}${lengthPrefixed(principal.id)}${lengthPrefixed(principal.tenant ?? '')}`;
  const cursorSecret = `${settings.cursorSecret ?? processSecret()}\u0000principal:${who}`;
  return { ...settings, maxK, cursorSecret };
}

function lengthPrefixed(field: string): string {
  return `${field.length}:${field}`;
}

let randomSecret: string | undefined;
/** Without a configured cursorSecret, one random secret per process (as the unbound cursor key is). */
function processSecret(): string {
  randomSecret ??= Array.from(crypto.getRandomValues(new Uint8Array(32)), (b) => b.toString(16).padStart(2, '0')).join('');
  return randomSecret;
}
