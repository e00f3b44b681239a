/**
 * The pure pieces behind the security suites (test/security): the method-name grammar and the
 * encoded upstream path, the params depth check, request ids within 2^53, the JSON media type
 * and path decoding of the HTTP envelope, the shared byte budget, and the generic failure
 * details clients see.
 */
import { describe, expect, it } from 'vitest';
import { isJsonMediaType, methodFromPath } from '../../src/core/http/envelope.js';
import { classify } from '../../src/core/protocol/jsonrpc.js';
import { nestsDeeperThan } from '../../src/core/protocol/limits.js';
import { isWellFormedMethodName, methodUrlPath } from '../../src/core/protocol/methods.js';
import { UpstreamError, publicDetail } from '../../src/core/upstream/errors.js';
import { ByteBudget } from '../../src/node/upstream/byte-budget.js';

describe('method names (§4.1)', () => {
  it('accepts core, vendor and notification names', () => {
    for (const name of ['retrieve', 'index/add', 'embed/sparse', 'x-acme/rerank-v2', 'notifications/cancel', 'catalog/list']) {
      expect(isWellFormedMethodName(name), name).toBe(true);
    }
  });

  it('refuses names that could leave a URL path segment', () => {
    for (const name of ['x-acme/../admin', 'x-acme/%2e%2e', 'a?b', 'a#b', 'a@b', 'a\r\nb', 'A', 'a//b', '/a', 'a/', '', 'x'.repeat(129)]) {
      expect(isWellFormedMethodName(name), JSON.stringify(name)).toBe(false);
    }
  });

  it('makes a path of a well-formed name only (a fetch URL would read %2E%2E as ..)', () => {
    expect(methodUrlPath('x-acme/do-thing')).toBe('x-acme/do-thing');
    for (const name of ['x/../../admin?all=1#f', 'x-acme/%2e%2e', 'a\r\nb@c', 'x-acme/..']) {
      expect(() => methodUrlPath(name), JSON.stringify(name)).toThrow(expect.objectContaining({ code: -32600 }));
    }
  });
});

describe('params depth', () => {
  const nested = (depth: number): unknown => {
    let value: unknown = 1;
    for (let i = 0; i < depth; i++) value = i % 2 === 0 ? { a: value } : [value];
    return value;
  };
  it('counts objects and arrays, iteratively (no stack limit)', () => {
    expect(nestsDeeperThan(nested(64), 64)).toBe(false);
    expect(nestsDeeperThan(nested(65), 64)).toBe(true);
    expect(nestsDeeperThan(nested(200_000), 64)).toBe(true);
    expect(nestsDeeperThan({ a: 'x'.repeat(10), b: [1, 2, { c: null }] }, 3)).toBe(false);
  });
});

describe('request ids', () => {
  it('refuses integers beyond 2^53 (they lost precision in parsing), keeps safe ones', () => {
    expect(classify({ jsonrpc: '2.0', id: 2 ** 53, method: 'ping' })).toMatchObject({ kind: 'invalid', id: null });
    expect(classify({ jsonrpc: '2.0', id: Number.MAX_SAFE_INTEGER, method: 'ping' })).toMatchObject({ kind: 'request' });
    expect(classify({ jsonrpc: '2.0', id: 1.5, method: 'ping' })).toMatchObject({ kind: 'request' });
  });

  it('answers an ill-formed method name -32600 with the id, but never answers such a notification', () => {
    expect(classify({ jsonrpc: '2.0', id: 3, method: 'x-a/../b' })).toMatchObject({ kind: 'invalid', id: 3 });
    expect(classify({ jsonrpc: '2.0', method: 'x-a/../b' })).toMatchObject({ kind: 'notification' });
  });
});

describe('HTTP envelope', () => {
  it('takes application/json with parameters, in any case, and nothing else', () => {
    expect(isJsonMediaType('application/json')).toBe(true);
    expect(isJsonMediaType('Application/JSON; charset=utf-8')).toBe(true);
    for (const type of [undefined, '', 'text/plain', 'application/jsonx', 'application/x-www-form-urlencoded']) {
      expect(isJsonMediaType(type), String(type)).toBe(false);
    }
  });

  it('reads the method from the path, null when it does not percent-decode', () => {
    expect(methodFromPath('/rcp/index/add', '/rcp')).toBe('index/add');
    expect(methodFromPath('/rcp', '/rcp')).toBeUndefined();
    expect(methodFromPath('/rcp/%E0%A4%A', '/rcp')).toBeNull();
    expect(methodFromPath('/rcp///retrieve', '/rcp')).toBe('retrieve');
    expect(methodFromPath('/rcp///', '/rcp')).toBeUndefined();
    expect(methodFromPath('/rcp/index%2Fadd', '/rcp')).toBe('index/add');
  });

  it('gives what the plain definitions give, fast paths included (differential, generated inputs)', () => {
    // The definitions the fast paths must agree with.
    const plainJsonType = (type: string): boolean => type.split(';', 1)[0]!.trim().toLowerCase() === 'application/json';
    const plainMethod = (path: string, base: string): string | undefined | null => {
      const rest = path.slice(base.length).replace(/^\/+/, '');
      if (rest.length === 0) return undefined;
      try {
        return decodeURIComponent(rest);
      } catch {
        return null;
      }
    };
    const pieces = ['/', '/', '%', '%2F', '%E0', '%A4', 'a', 'Z', ' ', ';', 'application', '/json', 'JSON', 'retrieve', 'x', '.'];
    let seed = 7;
    const next = (n: number): number => {
      seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
      return seed % n;
    };
    const text = (): string => Array.from({ length: next(7) }, () => pieces[next(pieces.length)]).join('');
    for (let i = 0; i < 3_000; i++) {
      const type = i % 3 === 0 ? 'application/json' + text() : text();
      expect(isJsonMediaType(type), type).toBe(plainJsonType(type));
      const base = ['', '/rcp', '/a/b'][i % 3]!;
      const path = base + text();
      expect(methodFromPath(path, base), path).toBe(plainMethod(path, base));
    }
  });
});

describe('byte budget', () => {
  it('is shared by every hold, refuses what would pass it, and gets everything back on free', () => {
    const budget = new ByteBudget(100);
    const a = budget.open();
    const b = budget.open();
    expect(a.take(60)).toBe(true);
    expect(b.take(50)).toBe(false); // nothing taken
    expect(b.take(40)).toBe(true);
    expect(budget.inUse).toBe(100);
    a.free();
    a.free(); // idempotent
    expect(budget.inUse).toBe(40);
    b.free();
    expect(budget.inUse).toBe(0);
  });
});

describe('failure details clients see', () => {
  it("are generic for platform-worded failures and keep the gateway's and the engine's own words", () => {
    expect(publicDetail(new UpstreamError('transport', 'request failed: connect ECONNREFUSED 10.0.0.7:9102'))).toBe(
      'the engine could not be reached',
    );
    expect(publicDetail(new UpstreamError('not-ready', 'engine is down: connect ECONNREFUSED 10.0.0.7:9102'))).toBe(
      'the engine is not ready',
    );
    expect(publicDetail(new UpstreamError('timeout', 'no answer within 800 ms'))).toBe('no answer within 800 ms');
    expect(publicDetail(new UpstreamError('remote-error', 'x', { code: -32602, message: 'invalid params: k' }))).toBe('invalid params: k');
  });
});
