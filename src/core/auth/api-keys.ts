/**
 * Static API keys. The config holds only `sha256:<hex>` of each key (with `${ENV}` allowed),
 * never the key. A plain SHA-256 is enough here, unlike for passwords: API keys are long random
 * strings, so there is no dictionary to run a fast hash against; a slow hash would only cost
 * every request. Uses `crypto.subtle`, so it runs on every runtime the core supports.
 */
import type { ApiKeySettings } from './config.js';

const utf8 = new TextEncoder();

/** `sha256:<hex>` of a key: what `auth.apiKeys[].hash` holds. */
export async function hashApiKey(key: string): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', utf8.encode(key)));
  return `sha256:${Array.from(digest, (b) => b.toString(16).padStart(2, '0')).join('')}`;
}

export class ApiKeyStore {
  private readonly byHash: ReadonlyMap<string, ApiKeySettings>;

  constructor(keys: readonly ApiKeySettings[]) {
    this.byHash = new Map(keys.map((key) => [key.hash, key]));
  }

  get size(): number {
    return this.byHash.size;
  }

  /**
   * The key's entry, or undefined. The lookup is by digest, so its timing depends on the
   * digest of the presented key, not on how much of a real key it matches.
   */
  async find(presented: string): Promise<ApiKeySettings | undefined> {
    if (this.byHash.size === 0 || presented.length === 0 || presented.length > 512) return undefined;
    return this.byHash.get(await hashApiKey(presented));
  }
}
