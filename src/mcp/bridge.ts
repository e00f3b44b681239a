/**
 * The MCP facade's one way into the gateway: an RCP method call made in process through a fresh
 * stateless `Session` — the same object that serves every RCP HTTP request. Reusing it (rather
 * than building a CallContext here) keeps one definition of the §13 gates, the deadline
 * (min of the configured default and `_meta.deadlineMs`), the progress and log sinks, admission,
 * the shutdown registry and the per-request observer (metrics, request log).
 *
 * Cancellation is the RCP cancel (§7.14): an aborted MCP signal calls `session.cancel(id)`, which
 * aborts the call's context with reason `cancel`; the federation then sends
 * `notifications/cancel` to stdio engines and drops the HTTP connections of the live legs.
 */
import { withMeta } from '../core/protocol/copy.js';
import type { WireError } from '../core/protocol/errors.js';
import type { JsonObject, NotificationMessage, RequestId } from '../core/protocol/jsonrpc.js';
import type { ProgressUpdate, RcpService } from '../core/service/contract.js';
import { Session, type SessionOptions } from '../core/session/session.js';

export type RcpOutcome = { ok: true; result: JsonObject } | { ok: false; error: WireError };

export interface RcpCall {
  method: string;
  params: JsonObject;
  /** The RCP request id (logs and metrics name it); unique per call is enough. */
  requestId: RequestId;
  /** Aborting it cancels the call exactly like an RCP `notifications/cancel`. */
  signal?: AbortSignal;
  /** Receives the gateway's progress for this call (aggregated over engines for `retrieve`, §9). */
  onProgress?: (update: ProgressUpdate) => void;
  /** Lower-cased inbound headers (`traceparent`, `x-rcpgw-engine`); none over stdio. */
  headers?: Readonly<Record<string, string>>;
}

export interface RcpBridgeOptions {
  service: RcpService;
  /** The transport the MCP client came in on; RCP logs and metrics report it. */
  transport: 'http' | 'stdio';
  /** Observer, admission and shutdown registry shared with the RCP listener of the same process. */
  session?: Partial<SessionOptions>;
}

/** The token the bridge asks the session to report progress under; it never leaves the process. */
const PROGRESS_TOKEN = 'mcp';

/** After the drain timeout, how long the -32010 answers to calls still running may take to settle. */
const DRAIN_ANSWER_GRACE_MS = 1_000;
/** Then how long those answers get to pass through the SDK to the client before it is closed. */
const RESULT_WRITE_GRACE_MS = 100;

export class RcpBridge {
  private active = 0;
  private idleWaiters: Array<() => void> = [];

  constructor(private readonly options: RcpBridgeOptions) {}

  get service(): RcpService {
    return this.options.service;
  }

  /** Calls not yet answered. */
  get inFlight(): number {
    return this.active;
  }

  /**
   * A transport's drain at shutdown: wait up to `timeoutMs` for the calls in flight; past it,
   * `failRemaining` (when this transport answers them itself) has them answered -32010, and the
   * answers get a moment to pass through the SDK to the client before the caller closes it.
   */
  async drain(timeoutMs: number, failRemaining?: () => void): Promise<void> {
    if (await this.idle(timeoutMs)) return;
    failRemaining?.();
    if (await this.idle(DRAIN_ANSWER_GRACE_MS)) await new Promise((resolve) => setTimeout(resolve, RESULT_WRITE_GRACE_MS));
  }

  /** Resolves true once no call is in flight, or false when `timeoutMs` passes first (graceful drain). */
  idle(timeoutMs: number): Promise<boolean> {
    if (this.active === 0) return Promise.resolve(true);
    return new Promise((resolve) => {
      const wake = (): void => {
        clearTimeout(timer);
        resolve(true);
      };
      const timer = setTimeout(() => {
        this.idleWaiters = this.idleWaiters.filter((waiter) => waiter !== wake);
        resolve(false);
      }, timeoutMs);
      this.idleWaiters.push(wake);
    });
  }

  async call(call: RcpCall): Promise<RcpOutcome> {
    this.active++;
    try {
      return await this.answer(call);
    } finally {
      this.active--;
      if (this.active === 0) for (const wake of this.idleWaiters.splice(0)) wake();
    }
  }

  private async answer(call: RcpCall): Promise<RcpOutcome> {
    const { service, transport } = this.options;
    const session = new Session(service, { ...this.options.session, transport, stateless: true });
    const { onProgress, signal } = call;
    const params = onProgress ? withMeta(call.params, { progressToken: PROGRESS_TOKEN }) : call.params;
    const sink = onProgress
      ? (frame: NotificationMessage): void => {
          if (frame.method !== 'notifications/progress') return; // logs (§17.1) are not carried over MCP
          const { progressToken: _token, ...update } = frame.params as JsonObject & ProgressUpdate;
          onProgress(update);
        }
      : undefined;
    const cancel = (): void => {
      session.cancel(call.requestId);
    };
    signal?.addEventListener('abort', cancel, { once: true });
    try {
      const request = { jsonrpc: '2.0', id: call.requestId, method: call.method, params };
      const pending = session.handle({ value: request, ...(sink ? { sink } : {}), ...(call.headers ? { headers: call.headers } : {}) });
      if (signal?.aborted) cancel();
      const answer = await pending;
      if (answer === null || Array.isArray(answer)) throw new Error('the session answered a single request with a batch or nothing');
      return 'result' in answer ? { ok: true, result: answer.result } : { ok: false, error: answer.error };
    } finally {
      signal?.removeEventListener('abort', cancel);
    }
  }
}
