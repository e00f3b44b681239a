/**
 * What an adapter's database side provides: one ranked full-text search with an optional filter,
 * plus an inspection for operators. The RCP side (service.ts) is shared by every kind.
 */
import type { FilterNode } from './filter/types.js';
import type { SqlDialect } from './filter/compile.js';

export interface SearchRequest {
  /** The query words (already extracted from the request's query). */
  words: readonly string[];
  /** The query text as the client sent it (for engines that parse their own query syntax). */
  raw: string;
  /** Rows to return at most. */
  limit: number;
  /** Rows to skip (pagination). */
  offset: number;
  filter: FilterNode | undefined;
  /** Only rows scoring at least this (§7.7 `minScore`). */
  minScore: number | undefined;
  includeText: boolean;
}

/** One result row: the configured columns under fixed names, meta columns by name. */
export interface SearchRow {
  id: unknown;
  score: number;
  text?: unknown;
  title?: unknown;
  uri?: unknown;
  meta: Record<string, unknown>;
}

/** A note for the operator about how the database will be used (shown by check-config). */
export interface InspectionNote {
  level: 'info' | 'warning';
  message: string;
}

export interface AdapterBackend {
  readonly kind: string;
  /** §6.1 `scoreScale` of the ranking function. */
  readonly scoreScale: 'bm25' | 'unbounded';
  /** The dialect its filters compile to. */
  readonly dialect: SqlDialect;
  /** Connect (or open) and check the configured table and columns exist. */
  open(): Promise<void>;
  search(request: SearchRequest): Promise<SearchRow[]>;
  /** Index use and other facts an operator should know. */
  inspect(): Promise<InspectionNote[]>;
  close(): Promise<void>;
}
