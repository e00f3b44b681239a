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
 * Random hex from a pool refilled from the CSPRNG (web-standard `crypto.getRandomValues`) every
 * few hundred ids and turned into one hex string per refill (a table of digit pairs, then one
 * decode), so an id is a slice of that string. Built two digits at a time by concatenation, a
 * trace and a span id cost ~1 µs per request in a loop; as slices, ~0.1 µs (bench/RESULTS.md,
 * "stop 33").
 */
const POOL_BYTES = 4096;
const pool = new Uint8Array(POOL_BYTES);
let poolHex = '';
let poolOffset = POOL_BYTES;
/** ASCII of each byte's two hex digits, and the decoder that turns a filled pool into one string. */
const HEX_PAIRS = new Uint16Array(256);
for (let byte = 0; byte < 256; byte++) {
  const digits = byte.toString(16).padStart(2, '0');
  // Stored so that the two bytes land in memory in reading order whatever the platform's endianness.
  new Uint8Array(HEX_PAIRS.buffer, byte * 2, 2).set([digits.charCodeAt(0), digits.charCodeAt(1)]);
}
const hexAscii = new Uint8Array(POOL_BYTES * 2);
const hexAsciiPairs = new Uint16Array(hexAscii.buffer);
const ascii = new TextDecoder(); // UTF-8: hex digits are ASCII, and every runtime has this decoder
const W3C_TRACE_ID = /^[0-9a-f]{32}$/;
const INVALID_TRACE_ID = '0'.repeat(32);

function randomHex(bytes: number): string {
  if (poolOffset + bytes > POOL_BYTES) refillPool();
  const at = poolOffset * 2;
  poolOffset += bytes;
  return poolHex.slice(at, at + bytes * 2);
}

function refillPool(): void {
  crypto.getRandomValues(pool);
  for (let i = 0; i < POOL_BYTES; i++) hexAsciiPairs[i] = HEX_PAIRS[pool[i]!]!;
  poolHex = ascii.decode(hexAscii);
  poolOffset = 0;
}

export function traceContext(headers: Readonly<Record<string, string>>, metaTraceId: string | undefined): TraceContext {
  const incoming = headers.traceparent ? TRACEPARENT.exec(headers.traceparent.trim().toLowerCase()) : null;
  const spanId = randomHex(8);
  if (incoming && incoming[2] !== INVALID_TRACE_ID) {
    return { traceId: incoming[2]!, traceparent: `00-${incoming[2]}-${spanId}-${incoming[4]}` };
  }
  if (metaTraceId === undefined) {
    const traceId = randomHex(16);
    return { traceId, traceparent: `00-${traceId}-${spanId}-01` };
  }
  // A client's own id is kept as its trace id; upstream W3C gets it only when it is one.
  const w3cId = W3C_TRACE_ID.test(metaTraceId) ? metaTraceId : randomHex(16);
  return { traceId: metaTraceId, traceparent: `00-${w3cId}-${spanId}-01` };
}
