import { describe, expect, it } from 'vitest';
import {
  constantTimeEqual,
  creditFeedback,
  signAttribution,
  verifyAttribution,
  type AttributionClaims,
} from '../../src/core/experiments/attribution.js';
import { RcpError } from '../../src/core/protocol/errors.js';
import { ExperimentRuntime } from '../../src/core/experiments/runtime.js';

const SECRET = 'attribution-secret-0123456789';
const NOW = 1_750_000_000_000;
const claims: AttributionClaims = {
  experiment: 'il-1',
  arms: ['abstracts', 'titles'],
  teams: new Map([
    ['184', 'A'],
    ['29', 'B'],
    ['31', 'A'],
    ['ü/ñ', 'B'],
  ]),
  issuedAt: NOW,
};
const verify = (token: unknown, now = NOW + 1_000, secret = SECRET) => verifyAttribution(token, { secret, ttlMs: 60_000, now });

function refusal(run: () => unknown): { code: number; field: unknown; message: string } {
  try {
    run();
  } catch (err) {
    if (err instanceof RcpError) return { code: err.code, field: err.data?.field, message: String(err.data?.detail ?? err.message) };
    throw err;
  }
  throw new Error('expected a refusal');
}

describe('attribution tokens', () => {
  it('round-trips the claims and stays compact', () => {
    const token = signAttribution(claims, SECRET);
    expect(token).toMatch(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{43}$/);
    expect(token.length).toBeLessThan(200);
    const back = verify(token);
    expect(back.experiment).toBe('il-1');
    expect(back.arms).toEqual(['abstracts', 'titles']);
    expect([...back.teams].sort()).toEqual([...claims.teams].sort());
    expect(back.issuedAt).toBe(NOW);
  });

  it('refuses a forged token with -32602', () => {
    const token = signAttribution(claims, SECRET);
    const [body, mac] = token.split('.') as [string, string];
    // Re-team a hit: the body changes, the MAC does not match.
    const forgedBody = Buffer.from(Buffer.from(body, 'base64url').toString('utf8').replace('"184"', '"999"')).toString('base64url');
    for (const forged of [`${forgedBody}.${mac}`, signAttribution(claims, 'another-secret-0123456789'), `${body}.${mac.slice(0, -2)}AA`]) {
      const r = refusal(() => verify(forged));
      expect(r.code).toBe(-32602);
      expect(r.field).toBe('_meta.x-rcpgw.attribution');
      expect(r.message).toMatch(/signature/);
    }
  });

  it('takes only the canonical spelling of a signature (the last character has spare bits)', () => {
    const token = signAttribution(claims, SECRET);
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    const last = alphabet.indexOf(token.at(-1)!);
    // A 32-byte MAC is 43 characters: the last one carries 4 bits, so its low 2 bits are spare.
    const variants = [1, 2, 3].map((spare) => `${token.slice(0, -1)}${alphabet[(last & ~3) | spare]}`);
    expect(verify(token)).toEqual(claims);
    for (const variant of variants.filter((v) => v !== token)) expect(() => verify(variant)).toThrow(RcpError);
  });

  it('is remembered for crediting by its signature, whatever the length of its body', () => {
    const runtime = new ExperimentRuntime();
    const token = signAttribution(claims, SECRET);
    expect(runtime.firstCredit(token)).toBe(true);
    expect(runtime.firstCredit(token)).toBe(false);
    expect(runtime.firstCredit(signAttribution({ ...claims, issuedAt: NOW + 1 }, SECRET))).toBe(true);
    // What is kept per token is its 43-character signature, not a body that grows with k and the hit ids.
    const held = (runtime as unknown as { credited: Set<string> }).credited;
    expect([...held].every((key) => key.length === 43)).toBe(true);
  });

  it('refuses a stale token, one from the future, and malformed input', () => {
    const token = signAttribution(claims, SECRET);
    expect(verify(token, NOW + 60_000).issuedAt).toBe(NOW); // exactly at the TTL: still fresh
    expect(refusal(() => verify(token, NOW + 60_001))).toMatchObject({ code: -32602, message: expect.stringMatching(/stale/) });
    expect(refusal(() => verify(token, NOW - 120_000))).toMatchObject({ code: -32602, message: expect.stringMatching(/future/) });
    for (const bad of [undefined, 42, '', 'no-dot', '.abc', 'abc.', '!!!.???']) expect(refusal(() => verify(bad)).code).toBe(-32602);
  });

  it('credits positive feedback signals to the team of each hit', () => {
    const back = verify(signAttribution(claims, SECRET));
    expect(
      creditFeedback(back, [
        { hitId: '184', used: true },
        { hitId: '31', cited: true },
        { hitId: '29', helpful: true },
      ]),
    ).toEqual({ A: 2, B: 1, outcome: 'A' });
    expect(
      creditFeedback(back, [
        { hitId: '29', reward: 0.5 },
        { hitId: '184', helpful: false },
        { hitId: '31', reward: -1 },
      ]),
    ).toEqual({ A: 0, B: 1, outcome: 'B' });
    expect(creditFeedback(back, [{ hitId: 'unknown', used: true }])).toEqual({ A: 0, B: 0, outcome: 'tie' });
  });

  it('compares byte arrays without short-circuiting', () => {
    expect(constantTimeEqual(new Uint8Array([1, 2, 3]), new Uint8Array([1, 2, 3]))).toBe(true);
    expect(constantTimeEqual(new Uint8Array([1, 2, 3]), new Uint8Array([1, 2, 4]))).toBe(false);
    expect(constantTimeEqual(new Uint8Array([1, 2]), new Uint8Array([1, 2, 3]))).toBe(false);
  });
});
