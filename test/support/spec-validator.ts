/**
 * Cross-checks RCP frames against the normative JSON Schema that ships beside
 * the repo (../shared/rcp/schema.json, or the file RCP_SCHEMA_PATH names). When
 * that file is absent (e.g. a clone without the shared folder) validation is a
 * no-op, `schemaAvailable` is false, the tests that need the schema show as
 * skipped (`schemaCrossCheck()`, `it.skipIf(!schemaAvailable)`), and
 * `schemaCrossCheckBanner()` says so in plain words.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv2020 } from 'ajv/dist/2020.js';
import type { ErrorObject, ValidateFunction } from 'ajv/dist/2020.js';
import { expect, it } from 'vitest';

/** Repository root (this file lives in <root>/test/support). */
export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
/** Where the shared schema is expected (RCP_SCHEMA_PATH overrides it), and how it is named in messages. */
export const SCHEMA_PATH = process.env.RCP_SCHEMA_PATH
  ? path.resolve(process.env.RCP_SCHEMA_PATH)
  : path.resolve(REPO_ROOT, '../shared/rcp/schema.json');
const SCHEMA_LABEL = process.env.RCP_SCHEMA_PATH ? SCHEMA_PATH : '../shared/rcp/schema.json';

interface Validators {
  root: ValidateFunction;
  resultFor: ValidateFunction;
}

function load(): Validators | null {
  if (!existsSync(SCHEMA_PATH)) return null;
  const schema = JSON.parse(readFileSync(SCHEMA_PATH, 'utf8')) as { $id?: string };
  const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false, logger: false });
  const id = schema.$id ?? 'rcp-schema';
  ajv.addSchema({ ...schema, $id: id });
  const root = ajv.getSchema(id);
  const resultFor = ajv.getSchema(`${id}#/$defs/ResultFor`);
  if (!root || !resultFor) throw new Error(`RCP schema at ${SCHEMA_PATH} has no root or $defs/ResultFor`);
  return { root, resultFor };
}

const validators = load();
export const schemaAvailable: boolean = validators !== null;

const fmt = (prefix: string, errors: ErrorObject[] | null | undefined): string[] =>
  (errors ?? []).map((e) => `${prefix}${e.instancePath || '/'} ${e.message ?? 'invalid'} (${e.schemaPath})`);

const isRecord = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/**
 * Validate one frame (or a batch array) against the root schema. For a success
 * response whose method is known, also validate `{method, result}` against
 * `#/$defs/ResultFor`. Returns a list of human-readable errors (empty = valid).
 */
export function validateFrame(frame: unknown, method?: string): string[] {
  if (!validators) return [];
  const errs: string[] = [];
  if (!validators.root(frame)) {
    // The root is a oneOf over every frame kind, so ajv reports every branch's
    // failure; that is noisy but still the truth about an invalid frame.
    errs.push(...fmt('frame', validators.root.errors));
  }
  if (method !== undefined && isRecord(frame) && 'result' in frame && !('error' in frame)) {
    if (!validators.resultFor({ method, result: frame.result })) errs.push(...fmt(`result(${method})`, validators.resultFor.errors));
  }
  return errs;
}

// ------------------------------------------------------------- collector --
const collected: string[] = [];
let count = 0;

/** Record a frame the system under test emitted; its errors go to the collector. */
export function recordEmitted(frame: unknown, method?: string): string[] {
  count++;
  const errs = validateFrame(frame, method);
  if (errs.length) {
    const snippet = JSON.stringify(frame)?.slice(0, 300) ?? String(frame);
    collected.push(`${method ?? '?'}: ${snippet}\n  ${errs.slice(0, 8).join('\n  ')}`);
  }
  return errs;
}
/** Record a protocol violation found outside the schema (e.g. a non-JSON stdout line). */
export function recordViolation(message: string): void {
  count++;
  collected.push(message);
}
export function emittedErrors(): string[] {
  return [...collected];
}
export function emittedCount(): number {
  return count;
}
export function resetEmitted(): void {
  collected.length = 0;
  count = 0;
}

/**
 * The file's schema cross-check as a test of its own, so that a run without the schema shows it
 * as skipped instead of passing it empty. Call it last in the file: tests run in the order they
 * are declared, so it sees every frame the file's tests recorded.
 */
export function schemaCrossCheck(): void {
  it.skipIf(!schemaAvailable)('every RCP frame recorded in this file is valid against the RCP schema', () => {
    expect(count).toBeGreaterThan(0);
    expect(emittedErrors()).toEqual([]);
  });
}

export function schemaCrossCheckBanner(): string {
  return schemaAvailable
    ? `RCP schema cross-check: ${count} frames validated against ${SCHEMA_LABEL}`
    : `RCP schema cross-check did NOT run: ${SCHEMA_LABEL} not found`;
}
