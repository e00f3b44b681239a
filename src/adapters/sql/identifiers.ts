/**
 * SQL identifiers come from the adapter's config, never from a request; they are still checked
 * against a strict pattern at load and always emitted quoted, so even a config cannot smuggle
 * SQL through a column name.
 */
import { z } from 'zod';

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

export const identifierSchema = z
  .string()
  .regex(IDENTIFIER, 'expected an SQL identifier (letters, digits, "_"; not starting with a digit; at most 63 characters)');

/** `table` or `schema.table`. */
export const qualifiedNameSchema = z
  .string()
  .refine(
    (value) => value.split('.').length <= 2 && value.split('.').every((part) => IDENTIFIER.test(part)),
    'expected a table name or schema.table (SQL identifiers)',
  );

/** `"name"`; a name that does not match the pattern is a programming error, not a request's. */
export function quoteIdentifier(name: string): string {
  if (!IDENTIFIER.test(name)) throw new Error(`not an SQL identifier: ${JSON.stringify(name)}`);
  return `"${name}"`;
}

/** `"schema"."table"` or `"table"`. */
export function quoteQualified(name: string): string {
  return name.split('.').map(quoteIdentifier).join('.');
}
