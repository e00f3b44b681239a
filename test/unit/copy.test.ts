/**
 * shallowCopy is the spread it stands in for (protocol/copy.ts): same keys in the same order,
 * own keys only, and a `__proto__` key from JSON stays a plain key, never the copy's prototype.
 */
import { describe, expect, it } from 'vitest';
import { shallowCopy } from '../../src/core/protocol/copy.js';

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
