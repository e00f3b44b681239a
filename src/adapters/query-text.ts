/**
 * The text of a retrieve `query` (§7.7: a string, a text Content, or a list of Content) and the
 * words an adapter searches for. Words are runs of letters and digits, so no character a client
 * sends is ever read as query syntax by the database's full-text parser.
 */
import { RcpError } from '../core/protocol/errors.js';

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The query's text; non-text Content is -32602 (these adapters retrieve text only). */
export function queryText(query: unknown): string {
  if (typeof query === 'string') return query;
  const parts = Array.isArray(query) ? query : [query];
  const texts: string[] = [];
  for (const part of parts) {
    if (!isRecord(part) || part.type !== 'text' || typeof part.text !== 'string') {
      throw RcpError.invalidParams('query', 'this engine retrieves by text: expected a string or text Content');
    }
    texts.push(part.text);
  }
  return texts.join('\n');
}

/** At most this many words are searched; a longer query is cut (and the cut is noted). */
export const MAX_QUERY_WORDS = 256;

/** Lower-cased words of letters and digits (Unicode), in order, duplicates removed. */
export function queryWords(text: string): { words: string[]; truncated: boolean } {
  const found = text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
  const unique = [...new Set(found)];
  return { words: unique.slice(0, MAX_QUERY_WORDS), truncated: unique.length > MAX_QUERY_WORDS };
}
