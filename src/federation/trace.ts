/**
 * Trace propagation: accept W3C `traceparent` (HTTP) and `_meta.traceId`, generate one when
 * absent, forward both to every engine.
 */
import { randomBytes } from 'node:crypto';

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

export interface TraceContext {
  traceId: string;
  /** The traceparent to send upstream (our own span id under the caller's trace). */
  traceparent: string;
}

export function traceContext(headers: Readonly<Record<string, string>>, metaTraceId: string | undefined): TraceContext {
  const incoming = headers.traceparent ? TRACEPARENT.exec(headers.traceparent.trim().toLowerCase()) : null;
  const spanId = randomBytes(8).toString('hex');
  if (incoming && incoming[2] !== '0'.repeat(32)) {
    return { traceId: incoming[2]!, traceparent: `00-${incoming[2]}-${spanId}-${incoming[4]}` };
  }
  const traceId = metaTraceId && /^[0-9a-f]{32}$/.test(metaTraceId) ? metaTraceId : metaTraceId ?? randomBytes(16).toString('hex');
  const w3cId = /^[0-9a-f]{32}$/.test(traceId) ? traceId : randomBytes(16).toString('hex');
  return { traceId, traceparent: `00-${w3cId}-${spanId}-01` };
}
