/**
 * Document identity across engines (§16.3): the stringified `id` by default; `citation.uri` or
 * a content hash when engines are known to share a corpus (falls back to the id when absent).
 */
import { createHash } from 'node:crypto';
import type { DedupPolicy, EngineHit } from './types.js';

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
      return `sha1:${createHash('sha1').update(hit.text.trim().replace(/\s+/g, ' ')).digest('base64url')}`;
    }
  }
  return `id:${String(hit.id)}`;
}
