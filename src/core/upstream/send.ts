/**
 * The innermost step of an engine's pipeline: hand the call to the transport with the time its
 * attempt has left now (the deadline layer fixed when it expires; queueing spent some of it),
 * the engine's answer-size cap, and progress and log relays only when the engine advertised
 * it can send them (§9 `streaming`, §17.1 `log`).
 */
import type { Call } from './call.js';
import type { UpstreamTransport } from './transport.js';

export interface SendTarget {
  transport: UpstreamTransport;
  /** Whether the engine advertised a capability (its first initialize, §13.2). */
  has(capability: string): boolean;
  maxResponseBytes: number;
}

export function sendVia(target: SendTarget): Call {
  return (call) => {
    const streaming = target.has('streaming');
    const logs = target.has('log');
    return target.transport.call(call.method, call.params, {
      signal: call.signal,
      timeoutMs: Math.max(1, Math.round((call.expiresAt ?? call.deadlineAt) - performance.now())),
      onProgress: streaming ? call.onProgress : undefined,
      onLog: logs ? call.onLog : undefined,
      // A per-leg token (and, over HTTP, an SSE answer) only when there are frames to relay.
      stream: streaming && (call.onProgress !== undefined || (call.onLog !== undefined && logs)),
      headers: call.headers,
      maxResponseBytes: target.maxResponseBytes,
    });
  };
}
