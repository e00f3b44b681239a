/**
 * Compiles a validated filter tree (validate.ts) to a SQL boolean expression and its parameters.
 * The SQL text is built only from configured column names (quoted by the dialect) and
 * placeholders; every client value is a parameter (§15.4). Each leaf is two-valued (never NULL),
 * so `not` means "does not match": `ne`/`nin` match rows where the field is absent, the ordered
 * comparisons and `eq`/`in`/`contains` do not.
 */
import type { DeclaredField, FilterNode, FilterScalar } from './types.js';

/** What differs between SQL engines; everything else is shared. */
export interface SqlDialect {
  /** A placeholder for the next parameter, given its 1-based number (`set`: a whole list of values). */
  placeholder(index: number, field: DeclaredField, set: boolean): string;
  /** The column reference for a field (quoted identifier, maybe behind an alias). */
  column(field: DeclaredField): string;
  /** The value as the driver binds it (SQLite has no booleans). */
  bind(value: FilterScalar, field: DeclaredField): unknown;
  /** `column IN set`, with the whole set bound as ONE parameter so the SQL never depends on it. */
  inSet(column: string, param: string, field: DeclaredField): string;
  /** The set parameter's bound value. */
  bindSet(values: readonly FilterScalar[], field: DeclaredField): unknown;
  /** Element membership in a list column. */
  listContains(column: string, param: string): string;
  /** Substring test on a text column (case-sensitive, no wildcard characters). */
  textContains(column: string, param: string): string;
  /** Wrap a column and a parameter for an ordered comparison of dates. */
  dateOperand(sql: string): string;
}

export interface CompiledSql {
  sql: string;
  params: unknown[];
}

const COMPARISON: Readonly<Record<string, string>> = { eq: '=', ne: '<>', gt: '>', gte: '>=', lt: '<', lte: '<=' };

/** `firstParam` is the number the first placeholder gets (parameters before it belong to the caller). */
export function compileFilter(root: FilterNode, dialect: SqlDialect, firstParam: number): CompiledSql {
  const params: unknown[] = [];
  const next = (value: unknown, field: DeclaredField, set = false): string => {
    params.push(value);
    return dialect.placeholder(firstParam + params.length - 1, field, set);
  };
  const walk = (node: FilterNode): string => {
    switch (node.kind) {
      case 'and':
      case 'or':
        return `(${node.children.map(walk).join(node.kind === 'and' ? ' AND ' : ' OR ')})`;
      case 'not':
        return `(NOT ${walk(node.child)})`;
      case 'exists': {
        const column = dialect.column(node.field);
        return node.present ? `(${column} IS NOT NULL)` : `(${column} IS NULL)`;
      }
      case 'set': {
        const column = dialect.column(node.field);
        const member = dialect.inSet(column, next(dialect.bindSet(node.values, node.field), node.field, true), node.field);
        return node.op === 'in' ? `(${column} IS NOT NULL AND ${member})` : `(${column} IS NULL OR NOT ${member})`;
      }
      case 'compare':
        return compare(node, dialect, next);
    }
  };
  return { sql: walk(root), params };
}

function compare(
  node: Extract<FilterNode, { kind: 'compare' }>,
  dialect: SqlDialect,
  next: (value: unknown, field: DeclaredField, set?: boolean) => string,
): string {
  const { field } = node;
  const column = dialect.column(field);
  const param = next(dialect.bind(node.value, field), field);
  if (node.op === 'contains') {
    const test = field.array ? dialect.listContains(column, param) : dialect.textContains(column, param);
    return `(${column} IS NOT NULL AND ${test})`;
  }
  const left = field.type === 'date' ? dialect.dateOperand(column) : column;
  const right = field.type === 'date' ? dialect.dateOperand(param) : param;
  const test = `${left} ${COMPARISON[node.op]!} ${right}`;
  return node.op === 'ne' ? `(${column} IS NULL OR ${test})` : `(${column} IS NOT NULL AND ${test})`;
}
