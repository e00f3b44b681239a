/**
 * JWT bearer tokens, verified with jose (web-standard crypto and fetch, so it runs on the edge
 * runtimes too): signature against a JWKS URL (fetched, cached, refreshed on an unknown `kid`) or
 * static keys, then issuer, audience, expiry (required) and not-before, with the configured
 * clock skew. HMAC and `none` are not accepted unless listed in `algorithms`.
 */
import {
  createLocalJWKSet,
  createRemoteJWKSet,
  errors,
  importSPKI,
  jwtVerify,
  type CryptoKey,
  type JWK,
  type JWTPayload,
  type JWTVerifyGetKey,
} from 'jose';
import type { JwtSettings } from './config.js';

export type JwtOutcome = { ok: true; claims: JWTPayload } | { ok: false; description: string };

/** A token is a compact JWS: three base64url segments. */
export function looksLikeJwt(token: string): boolean {
  return /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/.test(token);
}

export class JwtVerifier {
  private keys: Promise<JWTVerifyGetKey> | undefined;

  constructor(private readonly settings: JwtSettings) {}

  async verify(token: string): Promise<JwtOutcome> {
    const { settings } = this;
    try {
      const getKey = await (this.keys ??= keyResolver(settings));
      const { payload } = await jwtVerify(token, getKey, {
        issuer: settings.issuer,
        audience: settings.audience,
        algorithms: settings.algorithms,
        clockTolerance: settings.clockSkewSec,
        requiredClaims: ['exp'],
        ...(settings.maxTokenAgeSec !== undefined ? { maxTokenAge: settings.maxTokenAgeSec } : {}),
      });
      return { ok: true, claims: payload };
    } catch (err) {
      return { ok: false, description: describeFailure(err) };
    }
  }
}

/** What the client is told (RFC 6750 `error_description`): why, never key material. */
function describeFailure(err: unknown): string {
  if (err instanceof errors.JWTExpired) return 'token expired';
  if (err instanceof errors.JWTClaimValidationFailed) return `token claim "${err.claim}" is not acceptable (${err.reason})`;
  if (err instanceof errors.JWSSignatureVerificationFailed) return 'token signature does not verify';
  if (err instanceof errors.JWKSNoMatchingKey) return 'no verification key matches the token';
  if (err instanceof errors.JOSEAlgNotAllowed) return 'token algorithm is not accepted';
  if (err instanceof errors.JWKSTimeout) return 'verification keys are unavailable';
  if (err instanceof errors.JOSEError) return 'token is not valid';
  return 'token could not be verified';
}

async function keyResolver(settings: JwtSettings): Promise<JWTVerifyGetKey> {
  if (settings.jwksUrl !== undefined) {
    const remote = createRemoteJWKSet(new URL(settings.jwksUrl), { timeoutDuration: 5_000, cooldownDuration: 30_000 });
    return (header, token) => remote(header, token);
  }
  const jwks: JWK[] = [];
  const pems: Array<{ alg: string; key: CryptoKey }> = [];
  for (const key of settings.keys ?? []) {
    if ('pem' in key && typeof key.pem === 'string') pems.push({ alg: String(key.alg), key: await importSPKI(key.pem, String(key.alg)) });
    else jwks.push(key as JWK);
  }
  const local = jwks.length > 0 ? createLocalJWKSet({ keys: jwks }) : undefined;
  return async (header, token) => {
    const pem = pems.find((candidate) => candidate.alg === header.alg);
    if (pem && (header.kid === undefined || !local)) return pem.key;
    if (!local) throw new errors.JWKSNoMatchingKey();
    return local(header, token);
  };
}
