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
 * few hundred ids, turned into hex a window at a time (a table of digit pairs, then one decode),
 * so an id is a slice of the window's string. Built two digits at a time by concatenation, a
 * trace and a span id cost ~1 µs per request in a loop; as slices, ~0.15 µs (bench/RESULTS.md,
 * "stop 33"). A slice keeps its whole string alive, so the window is small: an id kept for long
 * (an SSE stream's) holds ~0.5 KB, not the pool's 8 KB of hex.
 */
const POOL_BYTES = 4096;
const WINDOW_BYTES = 256;
const pool = new Uint8Array(POOL_BYTES);
let poolOffset = POOL_BYTES;
let windowHex = '';
let windowOffset = WINDOW_BYTES;
/** ASCII of each byte's two hex digits, as one 16-bit unit. */
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
  if (windowOffset + bytes > WINDOW_BYTES) nextWindow();
  const at = windowOffset * 2;
  windowOffset += bytes;
  return windowHex.slice(at, at + bytes * 2);
}

/** The next window of the pool as hex, each byte used once; a spent pool is refilled first. */
function nextWindow(): void {
  if (poolOffset + WINDOW_BYTES > POOL_BYTES) {
    crypto.getRandomValues(pool);
    poolOffset = 0;
  }
  const end = poolOffset + WINDOW_BYTES;
  for (let i = poolOffset; i < end; i++) hexAsciiPairs[i] = HEX_PAIRS[pool[i]!]!;
  windowHex = ascii.decode(hexAscii.subarray(poolOffset * 2, end * 2));
  poolOffset = end;
  windowOffset = 0;
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
  // A client's own id is kept as its trace id; upstream W3C gets it only when it is a valid one
  // (W3C Trace Context: all zeros is an invalid trace-id, as on the header path above).
  const w3cId = W3C_TRACE_ID.test(metaTraceId) && metaTraceId !== INVALID_TRACE_ID ? metaTraceId : randomHex(16);
  return { traceId: metaTraceId, traceparent: `00-${w3cId}-${spanId}-01` };
}
