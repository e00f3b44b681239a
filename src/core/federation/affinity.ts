/**
 * Engine affinity for engine-scoped handles. A `memoryId` minted by one engine (§7.17) only means
 * something to that engine, so the gateway hands it out as `rcpgw~<engine>~<memoryId>` and routes
 * any later call carrying it back to the same engine, with the engine's own id restored. The
 * gateway keeps no state: the handle carries the engine (any replica can route it).
 */
const PREFIX = 'rcpgw~';
/** Engine ids never contain `~` (config schema), so the first `~` after the prefix ends the id. */
const SEPARATOR = '~';

export function wrapHandle(engineId: string, handle: string): string {
  return `${PREFIX}${engineId}${SEPARATOR}${handle}`;
}

/** `{engine, handle}` for a handle this gateway wrapped; undefined for anything else. */
export function unwrapHandle(value: string): { engine: string; handle: string } | undefined {
  if (!value.startsWith(PREFIX)) return undefined;
  const rest = value.slice(PREFIX.length);
  const at = rest.indexOf(SEPARATOR);
  if (at <= 0) return undefined;
  return { engine: rest.slice(0, at), handle: rest.slice(at + 1) };
}
