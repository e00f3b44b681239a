/**
 * `{ ...source }` for an object the hot path then extends with keys of its own.
 *
 * On Node 20 (V8 11) an object literal that opens with a spread and then adds a key the source
 * lacks (`{ ...call, expiresAt }`, `{ ...hit, meta }`) leaves the fast clone path: ~0.75–1 µs
 * and a fresh hidden class per object, which slows every later read of it and the answer's
 * serialisation too; copying key by key and then adding costs ~0.05 µs (docs/performance.md,
 * "CPU diet"). A spread that only overwrites keys the source has stays fast and needs no help.
 *
 * The result is the spread's: own enumerable keys in order, as data properties. A key
 * `__proto__` (JSON.parse makes it an own property) is defined, not assigned, so it stays a
 * plain key and never becomes the copy's prototype.
 */
import { isJsonObject, type JsonObject } from './jsonrpc.js';

export type Writable<T> = { -readonly [K in keyof T]: T[K] };

export function shallowCopy<T extends object>(source: T): Writable<T> {
  // Object.assign copies in one builtin call, onto the same shared hidden classes as a copy key by
  // key (~0.6 of its cost per hit; docs/performance.md). It assigns, so an own `__proto__` would
  // become the copy's prototype: such a source (JSON.parse makes them) is copied key by key below.
  // (Symbol keys, which JSON never makes: Object.assign copies them, as the spread does.)
  if (!Object.prototype.hasOwnProperty.call(source, '__proto__')) return Object.assign({}, source) as Writable<T>;
  const out: Record<string, unknown> = {};
  const from = source as Record<string, unknown>;
  for (const key in from) {
    if (!Object.prototype.hasOwnProperty.call(from, key)) continue;
    setOwn(out, key, from[key]);
  }
  return out as Writable<T>;
}

/**
 * `record[key] = value` as an own data property for every key, `__proto__` included (assigned,
 * that one would set the prototype, or be dropped for a non-object). The record stays an
 * ordinary fast object: one made with `Object.create(null)` instead is a dictionary, and as the
 * per-request depth record of paging that measured 3–5 % of the gateway's own CPU per request
 * (docs/performance.md, "The request line, a turn at a time").
 */
export function setOwn<T>(record: Record<string, T>, key: string, value: T): void {
  if (key === '__proto__') Object.defineProperty(record, key, { value, enumerable: true, writable: true, configurable: true });
  else record[key] = value;
}

/**
 * `params` with `fields` set in its `_meta` (the rest of `_meta` kept, a non-object `_meta`
 * replaced): `{ ...params, _meta: { ...params._meta, ...fields } }` without the slow path. Neither
 * `params` nor its `_meta` is changed.
 */
export function withMeta(params: JsonObject, fields: JsonObject): JsonObject {
  const meta: JsonObject = isJsonObject(params._meta) ? shallowCopy(params._meta) : {};
  for (const key in fields) meta[key] = fields[key];
  const out = shallowCopy(params);
  out._meta = meta;
  return out;
}
