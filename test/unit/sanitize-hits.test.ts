/**
 * An engine's hits are untrusted (§15.1): `sanitizeHits` drops hits without a valid id or score
 * and repeats of an id (the first, best-ranked, stays), cuts the list to what was asked, and drops
 * typed fields of the wrong JSON type. It reads typed fields by name and scans a page of ids
 * instead of hashing them; the reference below is the rule written the plain way (every key
 * walked, a Set of ids), and the two must agree on every answer.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { sanitizeHits } from '../../src/core/federation/sanitize.js';
import type { JsonObject } from '../../src/core/protocol/jsonrpc.js';

const isObject = (value: unknown): boolean => typeof value === 'object' && value !== null && !Array.isArray(value);

/** The Hit schema's typed fields and what each must hold; any other key may hold anything. */
const TYPED: Record<string, (value: unknown) => boolean> = {
  text: (v) => typeof v === 'string',
  modality: (v) => typeof v === 'string',
  unit: (v) => typeof v === 'string',
  meta: isObject,
  citation: isObject,
  provenance: isObject,
  trust: isObject,
  chunk: isObject,
  scores: isObject,
  content: Array.isArray,
  vector: Array.isArray,
  confidence: (v) => typeof v === 'number' && v >= 0 && v <= 1,
  level: (v) => Number.isSafeInteger(v) && (v as number) >= 0,
};
const fits = (key: string, value: unknown): boolean => TYPED[key]?.(value) ?? true;

function reference(result: JsonObject, limit: number): { hits: JsonObject[]; problems: string[] } | { error: string } {
  const raw = result.hits;
  if (!Array.isArray(raw)) return { error: '`hits` is not an array' };
  const hits: JsonObject[] = [];
  const seen = new Set<string>();
  let badId = 0;
  let badScore = 0;
  let duplicates = 0;
  for (const item of raw) {
    if (hits.length >= limit) break;
    if (!isObject(item)) {
      badId++;
      continue;
    }
    const hit = item as JsonObject;
    const id = hit.id;
    if (!(typeof id === 'string' || (typeof id === 'number' && Number.isFinite(id)))) {
      badId++;
      continue;
    }
    if (typeof hit.score !== 'number' || !Number.isFinite(hit.score)) {
      badScore++;
      continue;
    }
    if (seen.has(String(id))) {
      duplicates++;
      continue;
    }
    seen.add(String(id));
    const clean = Object.keys(hit).every((key) => fits(key, hit[key]));
    hits.push(clean ? hit : Object.fromEntries(Object.entries(hit).filter(([key, value]) => fits(key, value))));
  }
  const problems: string[] = [];
  if (badId > 0) problems.push(`${badId} hit(s) without a valid id dropped`);
  if (badScore > 0) problems.push(`${badScore} hit(s) with a non-numeric score dropped`);
  if (duplicates > 0) problems.push(`${duplicates} duplicate hit id(s) dropped`);
  if (raw.length > limit && hits.length === limit) problems.push(`answered ${raw.length} hits for ${limit} asked; extra hits cut`);
  return { hits, problems };
}

/** Any JSON value, of every type a typed field could wrongly hold. */
const anyValue = fc.oneof(
  fc.string({ maxLength: 4 }),
  fc.constantFrom(0, 0.5, 1, 2, -1, 1.5, 2 ** 53, null, true),
  fc.constant({ a: 1 }),
  fc.constant([1, 2]),
);

const hitArb = fc.oneof(
  { weight: 8, arbitrary: fc.dictionary(fc.constantFrom(...Object.keys(TYPED), 'extra', 'x-vendor'), anyValue, { maxKeys: 5 }) },
  { weight: 1, arbitrary: fc.constantFrom(null, 'hit', 7, [1]) },
);

/** Ids from a small pool (repeats, `1` against `'1'`), and now and then no id or no valid score. */
const itemArb = fc
  .tuple(
    hitArb,
    fc.oneof(fc.nat({ max: 60 }), fc.constantFrom('1', 'a', 'b', '', 'doc-1'), fc.constantFrom(Number.NaN, null, undefined)),
    fc.oneof(fc.double({ min: -5, max: 5, noNaN: true }), fc.constantFrom(Number.POSITIVE_INFINITY, '3', undefined)),
  )
  .map(([fields, id, score]) => {
    if (!isObject(fields)) return fields;
    const hit: Record<string, unknown> = { ...(fields as object) };
    if (id !== undefined) hit.id = id;
    if (score !== undefined) hit.score = score;
    return JSON.parse(JSON.stringify(hit)) as unknown; // what a wire answer holds
  });

describe('sanitizeHits', () => {
  it('keeps, drops and cleans exactly what the plain rule does, for any answer and limit', () => {
    fc.assert(
      fc.property(fc.array(itemArb, { maxLength: 90, size: 'max' }), fc.nat({ max: 100 }), (items, limit) => {
        const result: JsonObject = { hits: items as JsonObject['hits'] };
        const got = sanitizeHits(result, limit);
        const want = reference(result, limit);
        expect(got).toEqual(want);
        if ('hits' in got && 'hits' in want) {
          got.hits.forEach((hit, i) => {
            const expected = want.hits[i]!;
            // A clean hit is the engine's own object; a cleaned one is a copy (the engine's is never changed).
            expect(items.includes(hit)).toBe(items.includes(expected));
            expect(Object.keys(hit)).toEqual(Object.keys(expected));
          });
        }
      }),
      { numRuns: 1_500 },
    );
  });

  it('drops a repeated id past the first page of ids too', () => {
    const hits = Array.from({ length: 80 }, (_, i) => ({ id: i < 40 ? `d${i}` : `d${i - 40}`, score: 100 - i }));
    const out = sanitizeHits({ hits }, 100);
    expect('hits' in out && out.hits.map((hit) => hit.id)).toEqual(hits.slice(0, 40).map((hit) => hit.id));
    expect('problems' in out && out.problems).toEqual(['40 duplicate hit id(s) dropped']);
  });

  it('drops a typed field of the wrong type from a copy and leaves the engine’s hit as it was', () => {
    const hit = { id: 'x', score: 1, text: 7, meta: { a: 1 }, extra: [1], level: -1 };
    const out = sanitizeHits({ hits: [hit] }, 10);
    expect('hits' in out && out.hits[0]).toEqual({ id: 'x', score: 1, meta: { a: 1 }, extra: [1] });
    expect(hit.text).toBe(7);
  });
});
