/**
 * Validation of a client's `filter` (§8) against the fields an adapter declared. The result is a
 * typed tree whose field references are the declared columns and whose values are checked
 * scalars, so nothing a client sends can reach SQL text (§15.4): the compilers only ever emit
 * configured column names and placeholders.
 *
 * Errors: an unknown field, a value of the wrong JSON type, an operator the field's type does not
 * allow, a malformed or empty combinator → -32602 with `error.data.field`; an operator outside the
 * advertised `filter.operators` → -32005 with `error.data.option` (§8, §12).
 */
import { RcpError } from '../../core/protocol/errors.js';
import {
  FILTER_OPERATORS,
  operatorsFor,
  type DeclaredField,
  type DeclaredFields,
  type FilterNode,
  type FilterOperator,
  type FilterScalar,
} from './types.js';

/** Bounds on a filter's size (§15.5): generous for real use, fatal to a pathological tree. */
export const FILTER_LIMITS = { maxDepth: 16, maxNodes: 256, maxSetSize: 1_024 } as const;

interface Walk {
  fields: DeclaredFields;
  advertised: ReadonlySet<string>;
  nodes: number;
}

export function validateFilter(raw: unknown, fields: DeclaredFields, advertised: readonly FilterOperator[]): FilterNode {
  return node(raw, { fields, advertised: new Set(advertised), nodes: 0 }, 'filter', 1);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function node(raw: unknown, walk: Walk, path: string, depth: number): FilterNode {
  if (!isRecord(raw)) throw RcpError.invalidParams(path, 'expected a filter clause object');
  if (depth > FILTER_LIMITS.maxDepth) throw RcpError.invalidParams(path, `filter nests deeper than ${FILTER_LIMITS.maxDepth}`);
  walk.nodes += 1;
  if (walk.nodes > FILTER_LIMITS.maxNodes) throw RcpError.invalidParams('filter', `filter has more than ${FILTER_LIMITS.maxNodes} clauses`);
  const combinators = ['and', 'or', 'not'].filter((key) => key in raw);
  if (combinators.length > 1 || (combinators.length === 1 && ('field' in raw || 'op' in raw))) {
    throw RcpError.invalidParams(path, 'a clause is exactly one of {field, op, value}, {and}, {or} or {not}');
  }
  if ('and' in raw || 'or' in raw) {
    const kind = 'and' in raw ? 'and' : 'or';
    const list = raw[kind];
    if (!Array.isArray(list) || list.length === 0) throw RcpError.invalidParams(`${path}.${kind}`, `expected a non-empty array of clauses`);
    return { kind, children: list.map((child, i) => node(child, walk, `${path}.${kind}[${i}]`, depth + 1)) };
  }
  if ('not' in raw) return { kind: 'not', child: node(raw.not, walk, `${path}.not`, depth + 1) };
  return leaf(raw, walk, path);
}

function leaf(raw: Record<string, unknown>, walk: Walk, path: string): FilterNode {
  const { field: name, op } = raw;
  if (typeof name !== 'string') throw RcpError.invalidParams(`${path}.field`, 'expected a field name');
  if (typeof op !== 'string') throw RcpError.invalidParams(`${path}.op`, 'expected an operator');
  // Own properties only: a field named "constructor" or "__proto__" is simply unknown.
  const field = Object.hasOwn(walk.fields, name) ? walk.fields[name] : undefined;
  const fieldPath = `filter.${name}`;
  if (field === undefined) throw RcpError.invalidParams(fieldPath, `"${name}" is not an advertised filter field`);
  if (!(FILTER_OPERATORS as readonly string[]).includes(op)) throw RcpError.invalidParams(`${path}.op`, `"${op}" is not a filter operator`);
  if (!walk.advertised.has(op)) throw RcpError.optionUnsupported('filter.op', `operator "${op}" is not advertised`);
  const operator = op as FilterOperator;
  if (!operatorsFor(field).includes(operator)) {
    throw RcpError.invalidParams(fieldPath, `operator "${op}" does not apply to ${field.array ? 'list' : field.type} field "${name}"`);
  }
  const value = raw.value;
  if (operator === 'exists') {
    if (typeof value !== 'boolean') throw RcpError.invalidParams(fieldPath, 'exists takes true or false');
    return { kind: 'exists', field, present: value };
  }
  if (operator === 'in' || operator === 'nin') {
    if (!Array.isArray(value) || value.length === 0) throw RcpError.invalidParams(fieldPath, `${op} takes a non-empty array`);
    if (value.length > FILTER_LIMITS.maxSetSize)
      throw RcpError.invalidParams(fieldPath, `${op} takes at most ${FILTER_LIMITS.maxSetSize} values`);
    return { kind: 'set', field, op: operator, values: value.map((item) => scalar(item, field, fieldPath)) };
  }
  return { kind: 'compare', field, op: operator, value: scalar(value, field, fieldPath) };
}

/** A value of the JSON type the field's type takes (§8), normalised for binding. */
function scalar(value: unknown, field: DeclaredField, path: string): FilterScalar {
  switch (field.type) {
    case 'keyword':
    case 'text':
      if (typeof value !== 'string') throw RcpError.invalidParams(path, `expected a string for ${field.type} field`);
      // PostgreSQL text cannot hold U+0000; refusing it everywhere keeps the adapters alike.
      if (value.includes('\u0000')) throw RcpError.invalidParams(path, 'strings may not contain U+0000');
      return value;
    case 'int':
      if (typeof value === 'number' && Number.isSafeInteger(value)) return value;
      throw RcpError.invalidParams(path, 'expected an integer for int field');
    case 'float':
      if (typeof value === 'number' && Number.isFinite(value)) return value;
      throw RcpError.invalidParams(path, 'expected a number for float field');
    case 'bool':
      if (typeof value === 'boolean') return value;
      throw RcpError.invalidParams(path, 'expected true or false for bool field');
    case 'date':
      return dateValue(value, path);
  }
}

/** §4.6 timestamps: an RFC 3339 string or epoch milliseconds, bound as an RFC 3339 UTC string. */
function dateValue(value: unknown, path: string): string {
  const RFC3339 = /^\d{4}-\d{2}-\d{2}([Tt ]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?([Zz]|[+-]\d{2}:\d{2})?)?$/;
  let time: number | undefined;
  if (typeof value === 'number' && Number.isFinite(value)) time = value;
  else if (typeof value === 'string' && RFC3339.test(value)) {
    // A time without an offset is read as UTC, never as the server's local time.
    const iso = value.replace(' ', 'T');
    time = Date.parse(iso.includes('T') && !/([Zz]|[+-]\d{2}:\d{2})$/.test(iso) ? `${iso}Z` : iso);
  }
  if (time === undefined || Number.isNaN(time) || Math.abs(time) > 8.64e15) {
    throw RcpError.invalidParams(path, 'expected an RFC 3339 timestamp or epoch milliseconds for date field');
  }
  return new Date(time).toISOString();
}
