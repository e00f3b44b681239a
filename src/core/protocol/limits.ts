/**
 * Bounds on what a client may send, checked before anything interprets it (§15.5: servers SHOULD
 * cap what a request can make them do). JSON itself has no depth limit, but everything past the
 * parser — validation, fingerprints, logging, re-serialising for engines — walks values
 * recursively, so a 10 KB body nested 5,000 levels deep could make every engine leg fail and be
 * counted as engine faults.
 */

/** Deepest nesting of objects/arrays accepted in `params` (filter trees stay far below it). */
export const MAX_PARAMS_DEPTH = 64;

/** Whether `value` nests objects/arrays deeper than `maxDepth`; iterative, so any depth is safe to check. */
export function nestsDeeperThan(value: unknown, maxDepth: number): boolean {
  // Most params are one flat object: no child object, so depth 1 and no walk.
  if (maxDepth >= 1 && typeof value === 'object' && value !== null && !Array.isArray(value)) {
    let flat = true;
    for (const key in value) {
      const child = (value as Record<string, unknown>)[key];
      if (typeof child === 'object' && child !== null) {
        flat = false;
        break;
      }
    }
    if (flat) return false;
  }
  const stack: Array<{ value: unknown; depth: number }> = [{ value, depth: 0 }];
  while (stack.length > 0) {
    const { value: current, depth } = stack.pop()!;
    if (typeof current !== 'object' || current === null) continue;
    if (depth + 1 > maxDepth) return true;
    const children = Array.isArray(current) ? current : Object.values(current);
    for (const child of children) if (typeof child === 'object' && child !== null) stack.push({ value: child, depth: depth + 1 });
  }
  return false;
}
