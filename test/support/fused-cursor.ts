/**
 * What a compact fused cursor (src/core/federation/fused-cursor.ts) says apart from its expiry and
 * tag: tests compare the position two answers resume from, and a cursor's expiry and MAC differ
 * per request.
 */
export function fusedCursorPosition(token: string): string {
  const fields = token.slice(0, token.lastIndexOf('.')).split('~');
  fields.splice(2, 1); // the expiry
  return fields.join('~');
}
