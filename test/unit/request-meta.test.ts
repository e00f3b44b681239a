/**
 * `parseRequestMeta` reads the usual `_meta` (every field the gateway reads absent or valid)
 * without running the schema. Whatever it is given, it must answer what MetaSchema answers:
 * the same value, key for key and in the same order, and for anything the schema refuses the
 * same -32602 naming `_meta.<field>`.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { RcpError } from '../../src/core/protocol/errors.js';
import type { JsonObject } from '../../src/core/protocol/jsonrpc.js';
import { MetaSchema, parseParams, parseRequestMeta } from '../../src/core/protocol/params.js';

type Outcome = { value: unknown; keys: string[][] } | { error: { field: unknown; detail: unknown } };

/** Keys of the value and of every nested object, in order (toEqual ignores key order). */
function keysOf(value: unknown, out: string[][] = []): string[][] {
  if (value && typeof value === 'object') {
    if (!Array.isArray(value)) out.push(Object.keys(value));
    for (const child of Object.values(value)) keysOf(child, out);
  }
  return out;
}

function outcome(run: () => unknown): Outcome {
  try {
    const value = run();
    return { value, keys: keysOf(value) };
  } catch (err) {
    if (!(err instanceof RcpError)) throw err;
    return { error: { field: err.data?.field, detail: err.data?.detail } };
  }
}

/** The schema path alone, as parseRequestMeta ran it before the plain path. */
function throughSchema(raw: JsonObject): unknown {
  try {
    return parseParams(MetaSchema, raw);
  } catch (err) {
    if (err instanceof RcpError && err.data?.field)
      throw RcpError.invalidParams(`_meta.${err.data.field}`, String(err.data.detail ?? 'invalid'));
    throw err;
  }
}

function expectSame(raw: JsonObject): void {
  const fast = outcome(() => parseRequestMeta(raw));
  const slow = outcome(() => throughSchema(raw));
  expect(fast).toEqual(slow);
}

const anyJson = fc.oneof(
  fc.constant(null),
  fc.boolean(),
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.constantFrom(1.5, -1, -0, 2 ** 53, Number.MAX_SAFE_INTEGER),
  fc.string({ maxLength: 6 }),
  fc.constantFrom('', 'info', 'warning', 'trace', 'a b', 'x\n', '0123456789abcdef0123456789abcdef', 'é'),
  fc.constant([]),
  fc.constant(['a', 'b']),
  fc.constant(['a', 1]),
  fc.constant({}),
);

/** Mostly a value the field takes, sometimes any JSON: the plain path must be taken often, and left often. */
const field = <T>(valid: fc.Arbitrary<T>): fc.Arbitrary<unknown> =>
  fc.oneof({ weight: 3, arbitrary: valid }, { weight: 1, arbitrary: anyJson });

const federation = field(
  fc.record(
    {
      depth: field(fc.nat()),
      path: field(fc.array(fc.string({ maxLength: 4 }), { maxLength: 3 })),
      extra: anyJson,
    },
    { requiredKeys: [] },
  ),
);

const meta = fc.record(
  {
    progressToken: field(fc.oneof(fc.string({ maxLength: 4 }), fc.integer())),
    deadlineMs: field(fc.oneof(fc.nat(), fc.double({ min: 0, max: 1e6, noNaN: true }))),
    // 128 characters is the longest trace id taken (a longer one is dropped, not echoed).
    traceId: field(fc.constantFrom('t', 'trace-1', '0123456789abcdef0123456789abcdef', '~!x', 'x'.repeat(128), 'x'.repeat(129))),
    logLevel: field(fc.constantFrom('debug', 'info', 'notice', 'warning', 'error')),
    federation,
    other: anyJson,
    'x-rcpgw': fc.oneof(anyJson, fc.constant({ fusion: 'rrf' })),
  },
  { requiredKeys: [] },
);

describe('parseRequestMeta', () => {
  it.each<JsonObject>([
    {},
    { progressToken: 'p' },
    { progressToken: 7, traceId: 'trace-1' },
    { deadlineMs: 0 },
    { deadlineMs: 1500.5, logLevel: 'debug' },
    { federation: { depth: 3, path: ['gw-a', 'gw-b'] } },
    { federation: { path: [], depth: 0, note: 'kept' } },
    { other: 1, progressToken: 'p', 'x-rcpgw': { engines: ['e0'] } },
    { z: 1, federation: { depth: 1 }, logLevel: 'info', traceId: 't', deadlineMs: 5, progressToken: 1 },
  ])('gives what the schema gives for %j', (raw) => {
    const fast = parseRequestMeta(raw);
    expect(outcome(() => fast)).toEqual(outcome(() => throughSchema(raw)));
    // A copy: later changes to the request's own `_meta` never reach the parsed one.
    expect(fast).not.toBe(raw);
    const federation = raw.federation as JsonObject | undefined;
    if (federation) expect((fast as JsonObject).federation).not.toBe(federation);
    if (federation?.path) expect(((fast as JsonObject).federation as JsonObject).path).not.toBe(federation.path);
  });

  it.each<JsonObject>([
    { progressToken: null },
    { progressToken: 1.5 },
    { progressToken: true },
    { deadlineMs: -1 },
    { deadlineMs: '5' },
    { traceId: 'has a space' },
    { traceId: 5 },
    { traceId: 'x'.repeat(129) },
    { logLevel: 'trace' },
    { federation: null },
    { federation: [] },
    { federation: { depth: -1 } },
    { federation: { path: ['a', 2] } },
  ])('leaves %j to the schema, which gives the same answer', (raw) => {
    expectSame(raw);
  });

  it('names the field of a refused value as the schema does', () => {
    expect(() => parseRequestMeta({ deadlineMs: -1 })).toThrow(RcpError);
    expect(outcome(() => parseRequestMeta({ federation: { depth: 1.5 } }))).toMatchObject({ error: { field: '_meta.federation.depth' } });
  });

  it.each([
    '{"progressToken":"p","__proto__":{"polluted":true}}',
    '{"federation":{"path":[],"__proto__":{"depth":"x"}}}',
    '{"traceId":"bad id","__proto__":{"federation":{"depth":"x"}}}',
  ])('drops an own __proto__ key as the schema does: %s', (text) => {
    const raw = JSON.parse(text) as JsonObject;
    expectSame(raw);
    const parsed = parseRequestMeta(raw) as Record<string, unknown>;
    expect(Object.getPrototypeOf(parsed)).toBe(Object.prototype);
    expect(Object.prototype.hasOwnProperty.call(parsed, '__proto__')).toBe(false);
    expect(parsed.polluted).toBeUndefined();
    expect((parsed.federation as JsonObject | undefined)?.depth).toBeUndefined();
  });

  it('agrees with the schema on any JSON-shaped _meta', () => {
    fc.assert(
      fc.property(meta, (raw) => {
        expectSame(raw as JsonObject);
      }),
      { numRuns: 2_000 },
    );
  });
});
