/**
 * Metadata filters (§8) as the adapters see them: the declared fields an adapter may filter on,
 * the operators each field type allows, and the validated tree that the SQL compilers read.
 */

/** §8 field types an adapter can back with a column (`geo` has no portable SQL form, so none). */
export const FIELD_TYPES = ['keyword', 'text', 'int', 'float', 'bool', 'date'] as const;
export type FieldType = (typeof FIELD_TYPES)[number];

export const FILTER_OPERATORS = ['eq', 'ne', 'gt', 'gte', 'lt', 'lte', 'in', 'nin', 'contains', 'exists'] as const;
export type FilterOperator = (typeof FILTER_OPERATORS)[number];

/** A filterable field: the column behind it and its type, both from the adapter's config only. */
export interface DeclaredField {
  column: string;
  type: FieldType;
  /** The column holds a list (PostgreSQL array, SQLite JSON array): `contains` tests membership. */
  array: boolean;
}

export type DeclaredFields = Readonly<Record<string, DeclaredField>>;

const ORDERED: readonly FilterOperator[] = ['gt', 'gte', 'lt', 'lte'];
const ANY_FIELD: readonly FilterOperator[] = ['eq', 'ne', 'in', 'nin', 'exists'];

/**
 * §8's table: ordered comparison on int/float/date, `contains` on text (substring) or a list
 * column (element membership), the rest on anything. A list column compares its elements, so
 * only `contains` and `exists` apply to it.
 */
export function operatorsFor(field: DeclaredField): readonly FilterOperator[] {
  if (field.array) return ['contains', 'exists'];
  const ops: FilterOperator[] = [...ANY_FIELD];
  if (field.type === 'int' || field.type === 'float' || field.type === 'date') ops.push(...ORDERED);
  if (field.type === 'text') ops.push('contains');
  return ops;
}

/** The operators advertised in `filter.operators`: every operator some declared field allows. */
export function advertisedOperators(fields: DeclaredFields): FilterOperator[] {
  const allowed = new Set<FilterOperator>();
  for (const field of Object.values(fields)) for (const op of operatorsFor(field)) allowed.add(op);
  return FILTER_OPERATORS.filter((op) => allowed.has(op));
}

/** A scalar a comparison binds as a parameter; dates are normalised to RFC 3339 strings. */
export type FilterScalar = string | number | boolean;

export type FilterNode =
  | { kind: 'and'; children: FilterNode[] }
  | { kind: 'or'; children: FilterNode[] }
  | { kind: 'not'; child: FilterNode }
  | { kind: 'compare'; field: DeclaredField; op: Exclude<FilterOperator, 'in' | 'nin' | 'exists'>; value: FilterScalar }
  | { kind: 'set'; field: DeclaredField; op: 'in' | 'nin'; values: FilterScalar[] }
  | { kind: 'exists'; field: DeclaredField; present: boolean };
