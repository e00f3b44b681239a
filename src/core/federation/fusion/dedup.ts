/**
 * Document identity across engines (§16.3): the stringified `id` by default; `citation.uri` or
 * a content hash when engines are known to share a corpus (falls back to the id when absent).
 *
 * Ids are only comparable inside one id space: an engine configured with `idSpace` has its ids
 * qualified by it, so engines over different corpora whose ids coincide (`42` and `42`) never
 * merge, and a hostile engine cannot claim another space's documents by reusing their ids.
 * Engines without an `idSpace` share the default space (§16.3: engines over one corpus fuse).
 */
import { sha1 } from '@noble/hashes/legacy.js';
import { base64urlnopad } from '@scure/base';
import type { DedupPolicy, EngineHit } from './types.js';

const utf8 = new TextEncoder();

/** The id as the identity inside its space: the bare id in the default space. */
export function spacedId(id: string | number, idSpace: string | undefined): string {
  const text = typeof id === 'string' ? id : String(id);
  return idSpace === undefined ? text : `${idSpace}\u0000${text}`;
}

export function dedupKey(hit: EngineHit, policy: DedupPolicy, idSpace?: string): string {
  if (policy === 'id') return `id:${spacedId(hit.id, idSpace)}`;
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
  return `id:${spacedId(hit.id, idSpace)}`;
}
