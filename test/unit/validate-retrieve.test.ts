/**
 * `validateRetrieve` answers the plainest request (`query` text, optional positive `k`, nothing
 * else) without running the schema. Its answer must be the schema path's, key for key and in
 * the same order; everything else, including every bad `k`, must still get the schema's -32602.
 */
import { describe, expect, it } from 'vitest';
import { validateRetrieve } from '../../src/core/federation/retrieve-plan.js';
import { shallowCopy } from '../../src/core/protocol/copy.js';
import { RetrieveParamsSchema, parseParams } from '../../src/core/protocol/params.js';
import type { JsonObject } from '../../src/core/protocol/jsonrpc.js';
import { RcpError } from '../../src/core/protocol/errors.js';

const MAX_K = 100;

/** What the schema path gives (validateRetrieve before the fast path). */
function throughSchema(params: JsonObject): Record<string, unknown> {
  const parsed = parseParams(RetrieveParamsSchema, params);
  const out = shallowCopy(parsed) as Record<string, unknown>;
  out.k = Math.min(parsed.k ?? 10, MAX_K);
  return out;
}

describe('validateRetrieve on a plain request', () => {
  it.each<JsonObject>([
    { query: 'rank fusion' },
    { query: 'rank fusion', k: 10 },
    { k: 3, query: 'key order of the input does not matter' },
    { query: '' },
    { query: 'clamped', k: 5_000 },
    { query: 'one', k: 1 },
    { query: 'largest safe', k: Number.MAX_SAFE_INTEGER },
    { query: 'ünïcode \u2028 "quoted"' },
  ])('gives what the schema gives for %j', (params) => {
    const fast = validateRetrieve(params, MAX_K);
    const slow = throughSchema(params);
    expect(fast).toEqual(slow);
    expect(Object.keys(fast)).toEqual(Object.keys(slow));
  });

  it.each<[string, JsonObject, string]>([
    ['k zero', { query: 'q', k: 0 }, 'k'],
    ['k negative', { query: 'q', k: -1 }, 'k'],
    ['k fractional', { query: 'q', k: 1.5 }, 'k'],
    ['k beyond 2^53', { query: 'q', k: 2 ** 53 }, 'k'],
    ['k as text', { query: 'q', k: '10' }, 'k'],
    ['query missing', { k: 3 }, 'query'],
    ['query a number', { query: 42 }, 'query'],
  ])('leaves %s to the schema (-32602 naming the field)', (_what, params, field) => {
    let error: unknown;
    try {
      validateRetrieve(params, MAX_K);
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(RcpError);
    expect((error as RcpError).code).toBe(-32602);
    expect((error as RcpError).data?.field).toBe(field);
  });

  it('sends anything beyond query and k through the schema (null k dropped, other fields kept)', () => {
    expect(validateRetrieve({ query: 'q', k: null }, MAX_K)).toEqual(throughSchema({ query: 'q', k: null }));
    const withMode = validateRetrieve({ query: 'q', k: 4, mode: 'sparse' }, MAX_K);
    expect(withMode).toEqual({ query: 'q', k: 4, mode: 'sparse' });
    expect(() => validateRetrieve({ query: 'q', mode: 'telepathic' }, MAX_K)).toThrow(RcpError);
  });
});
