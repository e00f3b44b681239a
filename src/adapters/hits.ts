/**
 * Database rows → RCP hits (§7.7): `id` stringified, `text` when asked for, `citation` with the
 * source, title and uri, `meta` from the configured columns. Column values are converted to JSON
 * (§4.6): dates to RFC 3339, 64-bit integers to numbers when exact (else strings), binary dropped.
 */
import type { JsonObject } from '../core/protocol/jsonrpc.js';
import type { SearchRow } from './backend.js';

/** A JSON value as it goes on the wire. */
export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };

export function jsonValue(value: unknown): JsonValue | undefined {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return value;
  if (typeof value === 'number') return Number.isFinite(value) ? value : undefined;
  if (typeof value === 'bigint') return Number.isSafeInteger(Number(value)) ? Number(value) : value.toString();
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? undefined : value.toISOString();
  if (value instanceof Uint8Array) return undefined;
  if (Array.isArray(value)) return value.map((item) => jsonValue(item) ?? null);
  if (typeof value === 'object') {
    const out: { [key: string]: JsonValue } = {};
    for (const [key, item] of Object.entries(value)) {
      const converted = jsonValue(item);
      if (converted !== undefined) out[key] = converted;
    }
    return out;
  }
  return undefined;
}

function text(value: unknown): string | undefined {
  if (value === null || value === undefined) return undefined;
  return typeof value === 'string' ? value : String(jsonValue(value) ?? '');
}

export function rowToHit(row: SearchRow, source: string, includeText: boolean): JsonObject {
  const id = text(row.id) ?? '';
  const hit: JsonObject = { id, score: Number.isFinite(row.score) ? row.score : 0 };
  const body = includeText ? text(row.text) : undefined;
  if (body !== undefined) hit.text = body;
  const citation: JsonObject = { source: `${source}:${id}` };
  const title = text(row.title);
  if (title !== undefined && title !== '') citation.title = title;
  const uri = text(row.uri);
  if (uri !== undefined && uri !== '') citation.uri = uri;
  hit.citation = citation;
  const meta: JsonObject = {};
  for (const [key, value] of Object.entries(row.meta)) {
    const converted = jsonValue(value);
    if (converted !== undefined && converted !== null) meta[key] = converted;
  }
  if (Object.keys(meta).length > 0) hit.meta = meta;
  return hit;
}
