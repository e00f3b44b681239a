/**
 * Document identity across engines (§16.3): the stringified `id` by default; `citation.uri` or
 * a content hash when engines are known to share a corpus (falls back to the id when absent).
 */
import { sha1 } from '@noble/hashes/legacy.js';
import { base64urlnopad } from '@scure/base';
import type { DedupPolicy, EngineHit } from './types.js';

const utf8 = new TextEncoder();

export function dedupKey(hit: EngineHit, policy: DedupPolicy): string {
  if (policy === 'id') return `id:${String(hit.id)}`;
  if (policy === 'citation.uri') {
    const citation = hit.citation;
    if (citation && typeof citation === 'object' && !Array.isArray(citation)) {
      const uri = (citation as Record<string, unknown>).uri;
      if (typeof uri === 'string' && uri.length > 0) return `uri:${uri}`;
    }
  } else if (policy === 'content-hash') {
    if (typeof hit.text === 'string' && hit.text.length > 0) {
      // SHA-1 as an identity digest (not a security boundary): short keys, and the same keys as before.
      return `sha1:${base64urlnopad.encode(sha1(utf8.encode(hit.text.trim().replace(/\s+/g, ' '))))}`;
    }
  }
  return `id:${String(hit.id)}`;
}
