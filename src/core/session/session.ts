/**
 * One client connection's view of the protocol: the §13 lifecycle gate, id bookkeeping,
 * cancellation, deadlines and the "exactly one answer per request" guarantee. Transport-free:
 * transports hand it decoded JSON values and write whatever it returns or emits.
 *
 * Every path that answers is in this file, so "exactly one answer" is checked in one place; what
 * a session is given and reports (its options, the finished-request record) is in
 * session-options.ts; admission, HTTP sessions and limits are separate modules.
 */
import { PROTOCOL_VERSION, type InitializeResult } from '../protocol/capabilities.js';
import { ErrorCode, RcpError, toWireError } from '../protocol/errors.js';
import {
  classify,
  errorResponse,
  invalidRequest,
  successResponse,
  type JsonObject,
  type NotificationMessage,
  type RequestId,
  type RequestMessage,
  type ResponseMessage,
} from '../protocol/jsonrpc.js';
import { MAX_PARAMS_DEPTH, nestsDeeperThan } from '../protocol/limits.js';
import { UNGATED_ANYTIME, methodGate } from '../protocol/methods.js';
import {
  CancelParamsSchema,
  InitializeParamsSchema,
  PingParamsSchema,
  parseParams,
  parseRequestMeta,
  type RequestMeta,
} from '../protocol/params.js';
import { shedError } from './admission.js';
import { logFrames, progressFrames, type FrameSink } from './client-frames.js';
import type { InboundRequest, SessionOptions } from './session-options.js';
import { reportFinished } from './finished.js';
import { PendingRequest } from './pending.js';
import { abortReasonOf, type AbortReason, type CallContext, type LogLevel, type RcpService } from '../service/contract.js';
import { assertMethodAllowed, deadlineCeiling } from '../auth/principal.js';
import { traceContext } from '../protocol/trace.js';

export type { FinishedInfo, InboundRequest, SessionOptions } from './session-options.js';

const NO_HEADERS: Readonly<Record<string, string>> = Object.freeze({});

export class Session {
  private initialized: boolean;
  private clientWantsLogs = false;
  private clientLogLevel: LogLevel = 'info';
  private shuttingDown = false;
  private readonly inFlight = new Map<RequestId, PendingRequest>();
  /** §13.2: the capability set of a stateful session is fixed at its successful initialize. */
  private snapshot: InitializeResult | undefined;

  constructor(
    private readonly service: RcpService,
    private readonly options: SessionOptions,
  ) {
    this.initialized = options.stateless;
  }

  get isShutdown(): boolean {
    return this.shuttingDown;
  }

  get inFlightCount(): number {
    return this.inFlight.size;
  }

  /**
   * Handle one decoded JSON value: a message or a §11 batch. Resolves to what must be written
   * back: a response, an array of responses, or `null` for nothing (notifications). Never throws:
   * a fault of the session's own code is a rejection.
   */
  handle(input: InboundRequest): Promise<ResponseMessage | ResponseMessage[] | null> {
    // The steps below return a value when they answer at once and a promise only when the service
    // is called: each async function or await is one more promise and microtask per request.
    try {
      const { value } = input;
      if (Array.isArray(value)) return this.handleBatch(value, input.headers);
      const answer = this.handleOne(input);
      return answer instanceof Promise ? answer : Promise.resolve(answer);
    } catch (err) {
      return Promise.reject(err);
    }
  }

  private async handleBatch(batch: unknown[], headers: InboundRequest['headers']): Promise<ResponseMessage[] | ResponseMessage | null> {
    // §11: an empty batch is a single (non-array) -32600 with id null.
    if (batch.length === 0) return invalidRequest(null, 'empty batch');
    // Streaming is per request; batch members answer without progress frames.
    const answers = await Promise.all(batch.map((member) => this.handleOne({ value: member, headers })));
    const responses = answers.filter((a): a is ResponseMessage => a !== null);
    return responses.length > 0 ? responses : null;
  }

  /** Abort every in-flight request (transport closed or process stopping). */
  abortAll(reason: AbortReason): void {
    for (const entry of this.inFlight.values()) entry.controller.abort(reason);
  }

  /** Answer every in-flight request now with `error` (used by graceful shutdown after the drain timeout). */
  failAll(code: number, message: string): void {
    for (const [id, entry] of this.inFlight) {
      entry.settle(errorResponse(id, { code, message }));
      entry.controller.abort('shutdown');
    }
  }

  private handleOne(input: InboundRequest): ResponseMessage | null | Promise<ResponseMessage | null> {
    const classified = classify(input.value);
    switch (classified.kind) {
      case 'invalid':
        return invalidRequest(classified.id, classified.reason);
      case 'response':
        // Clients do not send responses (§2); there is nothing to answer.
        return null;
      case 'notification':
        this.handleNotification(classified.message);
        return null;
      case 'request':
        return this.handleRequest(classified.message, input.sink, input.headers ?? NO_HEADERS);
    }
  }

  private handleNotification(message: NotificationMessage): void {
    if (message.method !== 'notifications/cancel') return; // §4.5: ignore unknown notifications
    const parsed = CancelParamsSchema.safeParse(message.params);
    if (!parsed.success) return;
    this.cancel(parsed.data.id);
  }

  /** §7.14: cancel an in-flight request; unknown or finished ids are a no-op. */
  cancel(id: RequestId): boolean {
    const entry = this.inFlight.get(id);
    if (!entry) return false;
    entry.controller.abort('cancel');
    entry.settle(errorResponse(id, { code: ErrorCode.Cancelled, message: 'cancelled' }));
    return true;
  }

  private handleRequest(
    request: RequestMessage,
    sink: FrameSink | undefined,
    headers: Readonly<Record<string, string>>,
  ): ResponseMessage | Promise<ResponseMessage> {
    const { id, method } = request;
    const started = performance.now();
    if (this.shuttingDown) {
      // §13.1: never begin processing a request received after the shutdown response.
      return this.finish(
        method,
        started,
        undefined,
        errorResponse(id, { code: ErrorCode.BackendUnavailable, message: 'server is shutting down' }),
      );
    }
    if (nestsDeeperThan(request.params, MAX_PARAMS_DEPTH)) {
      // Refused before any engine is called, so a client's own absurd params never count against an engine.
      const error = RcpError.invalidParams('params', `params nest deeper than ${MAX_PARAMS_DEPTH} levels`);
      return this.finish(method, started, undefined, errorResponse(id, toWireError(error)));
    }
    // Only the lifecycle's own errors are its answer: finish stays outside the try, so it runs once.
    let lifecycle: ResponseMessage | undefined;
    try {
      lifecycle = this.lifecycle(request);
    } catch (err) {
      lifecycle = errorResponse(id, toWireError(err));
    }
    if (lifecycle) return this.finish(method, started, undefined, lifecycle);
    if (this.inFlight.has(id)) {
      // §4.7: ids are unique among in-flight requests; a duplicate would make cancel ambiguous.
      return this.finish(method, started, undefined, invalidRequest(id, 'id is already in flight'));
    }
    return this.dispatch(request, sink, headers, started);
  }

  /** Methods the session answers itself, and the gates in front of the service (§13). */
  private lifecycle(request: RequestMessage): ResponseMessage | undefined {
    const { id, method, params } = request;
    // §4.5: `notifications/*` are notifications; one sent with an id is malformed.
    if (method.startsWith('notifications/')) return invalidRequest(id, `${method} is a notification and must not carry an id`);
    if (method === 'initialize') return this.initialize(id, params);
    if (UNGATED_ANYTIME.has(method)) {
      if (method === 'info') return successResponse(id, this.describe());
      if (method === 'ping') {
        const { nonce } = parseParams(PingParamsSchema, params);
        return successResponse(id, nonce === undefined ? {} : { nonce });
      }
      // shutdown: stdio stops reading afterwards; stateless HTTP treats it as a no-op acknowledgement.
      if (!this.options.stateless) this.shuttingDown = true;
      return successResponse(id, {});
    }
    if (!this.initialized) throw new RcpError(ErrorCode.NotInitialized, 'not initialized: call initialize first');
    // §15.6: authorisation before capability gating, so -32003/-32004 reveal nothing to a principal without the scope.
    if (this.options.principal) assertMethodAllowed(this.options.principal, method);
    const gate = methodGate(method);
    // §12: -32004 (undefined) MUST be preferred over -32003 (unadvertised).
    if (!gate.defined) throw new RcpError(ErrorCode.UnknownMethod, `unknown method: ${method}`);
    if (gate.capability && !(gate.capability in this.describe().capabilities)) {
      throw new RcpError(ErrorCode.CapabilityMissing, `capability not advertised: ${gate.capability}`, { option: gate.capability });
    }
    return undefined;
  }

  private describe(): InitializeResult {
    return this.snapshot ?? this.service.describe(this.options.principal);
  }

  private initialize(id: RequestId, params: JsonObject): ResponseMessage {
    // §13: after a successful initialize a second one is -32600 (stateless HTTP answers idempotently, §5.2).
    if (this.initialized && !this.options.stateless) return invalidRequest(id, 'session is already initialized');
    const parsed = parseParams(InitializeParamsSchema, params);
    // §7.1: -32002 only when the floor cannot be met; the session stays uninitialized.
    if (parsed.protocolVersion < 1) {
      throw new RcpError(ErrorCode.VersionMismatch, 'no common protocol version', { detail: 'server supports RCP/1' });
    }
    const described = this.service.describe(this.options.principal);
    if (!this.options.stateless) {
      this.initialized = true;
      this.snapshot = described;
      const caps = parsed.capabilities ?? {};
      this.clientWantsLogs = 'log' in caps;
      const level = parsed._meta?.logLevel;
      if (level) this.clientLogLevel = level;
    }
    return successResponse(id, { ...described, protocolVersion: Math.min(parsed.protocolVersion, PROTOCOL_VERSION) });
  }

  private dispatch(
    request: RequestMessage,
    sink: FrameSink | undefined,
    headers: Readonly<Record<string, string>>,
    started: number,
  ): Promise<ResponseMessage> {
    const { id, method, params } = request;
    let meta: RequestMeta;
    try {
      meta = parseRequestMeta(params._meta);
    } catch (err) {
      return Promise.resolve(this.finish(method, started, undefined, errorResponse(id, toWireError(err))));
    }
    const admission = this.options.admit?.();
    if (admission && !admission.ok) {
      return Promise.resolve(this.finish(method, started, undefined, errorResponse(id, shedError(admission.retryAfterMs))));
    }
    const deadlineMs = Math.max(
      0,
      Math.min(this.service.defaultDeadlineMs, meta.deadlineMs ?? Infinity, deadlineCeiling(this.options.principal)),
    );
    const pending = new PendingRequest(id, deadlineMs, this.options.deadlineGraceMs ?? 250, () => {
      this.inFlight.delete(id);
      if (admission?.ok) admission.release();
      if (this.inFlight.size === 0) this.options.registry?.delete(this);
    });
    this.inFlight.set(id, pending);
    this.options.registry?.add(this);

    const ctx: CallContext = {
      method,
      requestId: id,
      signal: pending.controller.signal,
      deadlineAt: started + deadlineMs,
      deadlineMs,
      progress: progressFrames(meta, sink, pending),
      log: logFrames(meta, sink, pending, { clientWantsLogs: this.clientWantsLogs, level: this.clientLogLevel }),
      meta,
      trace: traceContext(headers, meta.traceId),
      transport: this.options.transport,
      headers,
    };
    if (this.options.principal) ctx.principal = this.options.principal;
    this.service.call(method, params, ctx).then(
      (result) => pending.settle(successResponse(id, result)),
      (err: unknown) => pending.settle(errorResponse(id, toWireError(err))),
    );
    return pending.answer.then((response) => this.finish(method, started, abortReasonOf(pending.controller.signal), response, ctx));
  }

  private finish(
    method: string,
    started: number,
    abortReason: AbortReason | undefined,
    response: ResponseMessage,
    ctx?: CallContext,
  ): ResponseMessage {
    const { onFinished } = this.options;
    if (onFinished) reportFinished(onFinished, this.options.principal, method, started, abortReason, response, ctx);
    return response;
  }
}
