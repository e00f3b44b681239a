/**
 * A plain CallContext for tests that call a service directly (no session): a fresh abort signal,
 * `deadlineMs` from now, no progress or log sink, the trace resolved from `meta` as the session
 * does, and anything else the test sets in `over`.
 */
import { traceContext } from '../../src/core/protocol/trace.js';
import type { CallContext } from '../../src/core/service/contract.js';

export function testCallContext(over: Partial<CallContext> = {}, deadlineMs = 30_000): CallContext {
  const meta = over.meta ?? {};
  return {
    method: 'retrieve',
    requestId: 1,
    signal: new AbortController().signal,
    deadlineAt: performance.now() + deadlineMs,
    deadlineMs,
    progress: undefined,
    log: undefined,
    meta,
    trace: traceContext(over.headers ?? {}, meta.traceId),
    transport: 'http',
    headers: {},
    ...over,
  };
}
