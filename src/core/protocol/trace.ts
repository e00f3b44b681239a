/**
 * Trace propagation: accept W3C `traceparent` (HTTP) and `_meta.traceId`, generate one when
 * absent, forward both to every engine.
 */
const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

export interface TraceContext {
  traceId: string;
  /** The traceparent to send upstream (our own span id under the caller's trace). */
  traceparent: string;
}

/**
 * Random hex from a pooled buffer refilled from the CSPRNG (web-standard
 * `crypto.getRandomValues`) every few hundred ids: a trace and a span id per request were a
 * native call and two allocations each, visible in the profile.
 */
const POOL_BYTES = 4096;
const pool = new Uint8Array(POOL_BYTES);
let poolOffset = POOL_BYTES;
const HEX = Array.from({ length: 256 }, (_, byte) => byte.toString(16).padStart(2, '0'));

function randomHex(bytes: number): string {
  if (poolOffset + bytes > POOL_BYTES) {
    crypto.getRandomValues(pool);
    poolOffset = 0;
  }
  let hex = '';
  for (let i = poolOffset; i < poolOffset + bytes; i++) hex += HEX[pool[i]!];
  poolOffset += bytes;
  return hex;
}

export function traceContext(headers: Readonly<Record<string, string>>, metaTraceId: string | undefined): TraceContext {
  const incoming = headers.traceparent ? TRACEPARENT.exec(headers.traceparent.trim().toLowerCase()) : null;
  const spanId = randomHex(8);
  if (incoming && incoming[2] !== '0'.repeat(32)) {
    return { traceId: incoming[2]!, traceparent: `00-${incoming[2]}-${spanId}-${incoming[4]}` };
  }
  const traceId = metaTraceId && /^[0-9a-f]{32}$/.test(metaTraceId) ? metaTraceId : (metaTraceId ?? randomHex(16));
  const w3cId = /^[0-9a-f]{32}$/.test(traceId) ? traceId : randomHex(16);
  return { traceId, traceparent: `00-${w3cId}-${spanId}-01` };
}
