/**
 * Helpers for the auth suites: API keys and their config hashes, an RSA key pair and tokens
 * signed with it (jose), a JWKS served from this process, the gateway's audit lines.
 */
import { createHash } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { SignJWT, exportJWK, generateKeyPair, type CryptoKey, type JWK } from 'jose';

export function keyHash(key: string): string {
  return `sha256:${createHash('sha256').update(key).digest('hex')}`;
}

export interface Signer {
  publicJwk: JWK;
  /** A token with these claims, `iat` now and `exp` in `expiresInSec` (negative = already expired). */
  token(claims: Record<string, unknown>, options?: TokenOptions): Promise<string>;
}

export interface TokenOptions {
  expiresInSec?: number;
  issuedAgoSec?: number;
  issuer?: string;
  audience?: string;
}

export const ISSUER = 'https://issuer.test';
export const AUDIENCE = 'rcp-gateway-test';

export async function rsaSigner(kid: string): Promise<Signer> {
  const { publicKey, privateKey } = await generateKeyPair('RS256', { extractable: true });
  const publicJwk = { ...(await exportJWK(publicKey)), kid, alg: 'RS256', use: 'sig' };
  return { publicJwk, token: (claims, options) => sign(privateKey, kid, claims, options) };
}

async function sign(
  key: CryptoKey,
  kid: string,
  claims: Record<string, unknown>,
  { expiresInSec = 300, issuedAgoSec = 5, issuer = ISSUER, audience = AUDIENCE }: TokenOptions = {},
): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT(claims)
    .setProtectedHeader({ alg: 'RS256', kid })
    .setIssuer(issuer)
    .setAudience(audience)
    .setIssuedAt(now - issuedAgoSec)
    .setExpirationTime(now + expiresInSec)
    .sign(key);
}

/** Serve `{ keys }` at http://127.0.0.1:PORT/jwks.json; counts fetches. */
export async function serveJwks(keys: JWK[]): Promise<{ url: string; fetches: () => number; close: () => Promise<void> }> {
  let fetches = 0;
  const server = http.createServer((_req, res) => {
    fetches++;
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ keys }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/jwks.json`,
    fetches: () => fetches,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

export interface AuditLine {
  msg: string;
  audit: {
    principal: string | null;
    tenant?: string;
    via?: string;
    method: string;
    engines: string[];
    code: number;
    outcome: string;
    status?: number;
    query?: string;
    id?: string | number | null;
  };
}

export function auditLines(stderr: string): AuditLine[] {
  const out: AuditLine[] = [];
  for (const line of stderr.split('\n')) {
    if (!line.startsWith('{')) continue;
    try {
      const parsed = JSON.parse(line) as AuditLine;
      if (parsed.msg === 'audit') out.push(parsed);
    } catch {
      /* not a log line */
    }
  }
  return out;
}
