/**
 * shallowCopy is the spread it stands in for (protocol/copy.ts): same keys in the same order,
 * own keys only, and a `__proto__` key from JSON stays a plain key, never the copy's prototype.
 * withMeta is `{ ...params, _meta: { ...params._meta, ...fields } }`, leaving its input alone.
 */
import { describe, expect, it } from 'vitest';
import { shallowCopy, withMeta } from '../../src/core/protocol/copy.js';

describe('shallowCopy', () => {
  it('copies own keys in order, shallowly, and leaves the source alone', () => {
    const nested = { uri: 'x' };
    const source = { id: 'd1', score: 2, citation: nested, text: 't' };
    const copy = shallowCopy(source);
    copy.score = 1;
    expect(Object.keys(copy)).toEqual(['id', 'score', 'citation', 'text']);
    expect(copy.citation).toBe(nested);
    expect(source.score).toBe(2);
    expect(JSON.stringify({ ...source, score: 1 })).toBe(JSON.stringify(copy));
  });

  it('keeps a JSON `__proto__` key as data and the copy an ordinary object', () => {
    const source = JSON.parse('{"id":"d1","__proto__":{"polluted":true},"score":1}') as Record<string, unknown>;
    const copy = shallowCopy(source);
    expect(Object.getPrototypeOf(copy)).toBe(Object.prototype);
    expect((copy as { polluted?: unknown }).polluted).toBeUndefined();
    expect(Object.keys(copy)).toEqual(['id', '__proto__', 'score']);
    expect(JSON.stringify(copy)).toBe('{"id":"d1","__proto__":{"polluted":true},"score":1}');
    expect(copy).toEqual({ ...source });
  });

  it('leaves out inherited keys, as a spread does', () => {
    const source = Object.create({ inherited: 1 }) as Record<string, unknown>;
    source.own = 2;
    expect(shallowCopy(source)).toEqual({ own: 2 });
  });
});

describe('withMeta', () => {
  it('sets fields in a copy of `_meta`, keeping the rest and the key order, and changes nothing it was given', () => {
    const meta = { traceId: 'a', deadlineMs: 9 };
    const params = { query: 'q', _meta: meta, k: 3 };
    const out = withMeta(params, { deadlineMs: 5, progressToken: 't' });
    expect(out).toEqual({ ...params, _meta: { ...meta, deadlineMs: 5, progressToken: 't' } });
    expect(Object.keys(out)).toEqual(['query', '_meta', 'k']);
    expect(Object.keys(out._meta as object)).toEqual(['traceId', 'deadlineMs', 'progressToken']);
    expect(params._meta).toBe(meta);
    expect(meta).toEqual({ traceId: 'a', deadlineMs: 9 });
  });

  it('starts `_meta` afresh when there is none or it is not an object', () => {
    expect(withMeta({ query: 'q' }, { progressToken: 1 })).toEqual({ query: 'q', _meta: { progressToken: 1 } });
    expect(withMeta({ query: 'q', _meta: [1] }, { progressToken: 1 })).toEqual({ query: 'q', _meta: { progressToken: 1 } });
  });
});
