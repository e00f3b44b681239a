/**
 * A CallContext for the calls the console makes through the gateway's own service (searches,
 * the experiments read-out): HTTP-like, no inbound headers, its own deadline and abort signal.
 */
import type { CallContext, ProgressUpdate } from '../../core/service/contract.js';
import type { RequestMeta } from '../../core/protocol/params.js';
import { traceContext } from '../../core/protocol/trace.js';

let nextId = 1;

export interface ConsoleCall {
  ctx: CallContext;
  /** Abort the call (the watcher left); idempotent. */
  abort(reason: 'disconnect' | 'cancel'): void;
  /** Clear the deadline timer once the call has settled. */
  done(): void;
}

export function consoleCall(
  method: string,
  deadlineMs: number,
  meta: RequestMeta = {},
  progress?: (update: ProgressUpdate) => void,
): ConsoleCall {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort('deadline'), deadlineMs);
  timer.unref?.();
  const ctx: CallContext = {
    method,
    requestId: `console-${nextId++}`,
    signal: controller.signal,
    deadlineAt: performance.now() + deadlineMs,
    deadlineMs,
    progress,
    log: undefined,
    meta,
    trace: traceContext({}, meta.traceId),
    transport: 'http',
    headers: {},
  };
  return {
    ctx,
    abort: (reason) => {
      if (!controller.signal.aborted) controller.abort(reason);
    },
    done: () => clearTimeout(timer),
  };
}
