/**
 * A scriptable RCP engine for the in-process tier: an `RcpService` whose capabilities, hits,
 * timing and faults a test sets (and changes mid-test), and which records every call it gets.
 * It sits behind the in-memory transport (src/core/upstream/in-memory.ts), so the gateway talks
 * to it through a real engine-side Session. Waits run on `setTimeout`, so `vi.useFakeTimers()`
 * drives them: no test of this tier waits on the wall clock.
 */
import type { Capabilities, InitializeResult } from '../../src/core/protocol/capabilities.js';
import { ErrorCode, RcpError } from '../../src/core/protocol/errors.js';
import type { JsonObject } from '../../src/core/protocol/jsonrpc.js';
import type { AbortLike } from '../../src/core/service/cancellation.js';
import type { CallContext, LogEntry, ProgressUpdate, RcpService } from '../../src/core/service/contract.js';

export interface FakeHit extends JsonObject {
  id: string;
  score: number;
  text?: string;
  meta?: JsonObject;
}

/** How a call fails, if it does. */
export type Fault =
  /** Answer with this JSON-RPC error (`data.retryAfterMs` is honoured by the gateway). */
  | { error: number; message?: string; data?: JsonObject }
  /** Never answer, whatever happens: the engine-side Session or the gateway must give up on it. */
  | { hang: true }
  /** Answer with a result of the wrong shape (`hits` is not an array). */
  | { malformed: true }
  /** Pad the answer to at least this many bytes of JSON. */
  | { oversizedBytes: number };

/** What the engine does with each call; read when the call arrives. */
export interface Behaviour {
  /** Wait this long before answering (or failing). */
  delayMs: number;
  fault: Fault | undefined;
  /** Sent (when the caller asked for progress) before the wait. */
  progress: ProgressUpdate[];
  /** Sent (when the caller asked for logs) before the wait. */
  logs: LogEntry[];
}

export type MethodHandler = (params: JsonObject, ctx: CallContext) => JsonObject | Promise<JsonObject>;

export interface FakeEngineOptions {
  /** Defaults to `{ retrieve: { maxK: 50 } }`. */
  capabilities?: Capabilities;
  /** The ranked list `retrieve` serves (cut to `k`); default: 20 hits `<id>-1` … `<id>-20`. */
  hits?: FakeHit[] | ((params: JsonObject) => FakeHit[]);
  /** Answers for methods other than `retrieve`; an advertised method without one echoes its params. */
  methods?: Record<string, MethodHandler>;
  /** Initial behaviour (see `behave`). */
  behaviour?: Partial<Behaviour>;
}

export interface RecordedCall {
  method: string;
  params: JsonObject;
  /** `performance.now()` when the call arrived (fake-timer time under `vi.useFakeTimers()`). */
  at: number;
  outcome: 'pending' | 'answered' | 'failed' | 'aborted';
  /** Why the engine-side Session aborted it (cancel, deadline, shutdown). */
  abortReason?: string;
}

const CALM: Behaviour = { delayMs: 0, fault: undefined, progress: [], logs: [] };

export class FakeEngine implements RcpService {
  readonly calls: RecordedCall[] = [];
  readonly defaultDeadlineMs = 60_000;
  private behaviour: Behaviour;
  private readonly capabilities: Capabilities;
  private initFault: number | undefined;

  constructor(
    readonly id: string,
    private readonly options: FakeEngineOptions = {},
  ) {
    this.capabilities = options.capabilities ?? { retrieve: { maxK: 50 } };
    this.behaviour = { ...CALM, ...options.behaviour };
  }

  /** Change how later calls are answered (fields not given keep their value). */
  behave(change: Partial<Behaviour>): this {
    this.behaviour = { ...this.behaviour, ...change };
    return this;
  }

  fail(code: number, data?: JsonObject): this {
    return this.behave({ fault: { error: code, ...(data ? { data } : {}) } });
  }

  hang(): this {
    return this.behave({ fault: { hang: true } });
  }

  /** Healthy again, answering at once. */
  heal(): this {
    this.behaviour = { ...CALM };
    return this;
  }

  /** Make `initialize` fail with `code` (undefined: succeed again). */
  failInitialize(code: number | undefined): this {
    this.initFault = code;
    return this;
  }

  callsOf(method: string): RecordedCall[] {
    return this.calls.filter((call) => call.method === method);
  }

  describe(): InitializeResult {
    if (this.initFault !== undefined) throw new RcpError(this.initFault, `engine ${this.id} refuses to initialize`);
    return { protocolVersion: 1, server: { name: `fake-${this.id}`, version: '0.0.0' }, capabilities: this.capabilities };
  }

  async call(method: string, params: JsonObject, ctx: CallContext): Promise<JsonObject> {
    const record: RecordedCall = { method, params, at: performance.now(), outcome: 'pending' };
    this.calls.push(record);
    const behaviour = this.behaviour;
    const noteAbort = (): void => {
      record.outcome = 'aborted';
      record.abortReason = String(ctx.signal.reason);
    };
    for (const entry of behaviour.logs) ctx.log?.(entry);
    for (const update of behaviour.progress) ctx.progress?.(update);
    if (behaviour.fault && 'hang' in behaviour.fault) {
      // Deaf to cancel and deadline alike: the engine-side Session answers for it (-32006 on
      // cancel, -32014 after its grace), unless the gateway gave up on the call first.
      ctx.signal.addEventListener('abort', noteAbort, { once: true });
      return new Promise<JsonObject>(() => undefined);
    }
    try {
      await pause(behaviour.delayMs, ctx.signal);
      const result = await this.answer(method, params, ctx, behaviour.fault);
      record.outcome = 'answered';
      return result;
    } catch (err) {
      if (ctx.signal.aborted) noteAbort();
      else record.outcome = 'failed';
      throw err;
    }
  }

  private async answer(method: string, params: JsonObject, ctx: CallContext, fault: Fault | undefined): Promise<JsonObject> {
    if (fault && 'error' in fault) throw new RcpError(fault.error, fault.message ?? `engine ${this.id} fails`, fault.data);
    if (fault && 'malformed' in fault) return { hits: 'not a list' };
    const handler = this.options.methods?.[method];
    const result = handler ? await handler(params, ctx) : method === 'retrieve' ? this.retrieve(params) : { echo: params, engine: this.id };
    if (fault && 'oversizedBytes' in fault) return { ...result, padding: 'x'.repeat(fault.oversizedBytes) };
    return result;
  }

  /** The engine's ranked list, cut to `k`; with `pagination` advertised, its own offset cursors. */
  private retrieve(params: JsonObject): JsonObject {
    const all = typeof this.options.hits === 'function' ? this.options.hits(params) : (this.options.hits ?? defaultHits(this.id, 20));
    const k = typeof params.k === 'number' ? params.k : 10;
    const offset = typeof params.cursor === 'string' ? Number(params.cursor) : 0;
    const page = all.slice(offset, offset + k);
    const paginates = 'pagination' in this.capabilities;
    const more = paginates && offset + k < all.length;
    return { hits: page, ...(more ? { nextCursor: String(offset + k) } : {}) };
  }
}

/** `count` hits `<prefix>-1` … with strictly falling scores. */
export function defaultHits(prefix: string, count: number): FakeHit[] {
  return Array.from({ length: count }, (_, i) => ({
    id: `${prefix}-${i + 1}`,
    score: 1 - i / (count + 1),
    text: `passage ${i + 1} of ${prefix}`,
  }));
}

/**
 * Resolve after `ms`. An engine that honours its signal stops early: -32014 when its deadline
 * passed (§13.1), -32006 when it was cancelled (§7.14).
 */
function pause(ms: number, signal: AbortLike): Promise<void> {
  if (ms <= 0) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(
        signal.reason === 'deadline'
          ? new RcpError(ErrorCode.Timeout, 'deadline exceeded', { retryable: true })
          : new RcpError(ErrorCode.Cancelled, `aborted (${String(signal.reason)})`),
      );
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
  });
}
