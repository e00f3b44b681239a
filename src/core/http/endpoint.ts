/**
 * The RCP endpoint behind `POST <base>[/<method>]`: the envelope checked (media type, path), the
 * body read, batch size and admission checked, then the body handed to a Session (one per
 * request: HTTP is stateless, §5.2) and its answer sent as JSON or as an SSE stream. Moves bytes
 * only; the Session does the protocol.
 *
 * `serve` works on an `HttpExchange` and answers with a plain `HttpReply` (or, for SSE, a
 * streaming `Response`), so the same code serves Hono's route (`handle`) and a runtime's direct
 * lane that writes the reply to its own response object (src/node/server/direct-lane.ts).
 */
import type { Context, Env } from 'hono';
import { classify, invalidRequest, type ResponseMessage } from '../protocol/jsonrpc.js';
import { SESSION_HEADER, cancelIdsOf, requestIdsOf, type HttpSessionRegistry } from '../session/http-sessions.js';
import { Session, type SessionOptions } from '../session/session.js';
import type { RcpService } from '../service/contract.js';
import {
  atCapacity,
  batchTooLarge,
  compactOf,
  envelopeFault,
  NO_CONTENT,
  toResponse,
  isJsonMediaType,
  issueSessionToken,
  jsonReply,
  methodFromPath,
  payloadTooLarge,
  readEnvelope,
  type Envelope,
  type HttpReply,
} from './envelope.js';
import { BodyTimeoutError, type HttpExchange, type RequestIo } from './request-io.js';
import { sseReply } from './sse.js';
import { principalOf } from '../auth/http-guard.js';

type Reply = ResponseMessage | ResponseMessage[] | null;

export interface EndpointOptions<E extends Env> {
  base: string;
  maxBodyBytes: number;
  sseHeartbeatMs: number;
  /** Whether SSE may be used at all; it is also used only while `streaming` is advertised (§5.2). */
  streaming: boolean;
  /** Admission for `weight` requests at once (a batch counts each member). */
  admit?: (weight: number) => { ok: true; release: () => void } | { ok: false; retryAfterMs: number };
  /** Most members accepted in one batch (§11); larger batches are refused whole with 413 / -32013. */
  maxBatchSize: number;
  session?: Partial<SessionOptions>;
  onStreamOpen?: () => void;
  onStreamClose?: () => void;
  io: RequestIo<E>;
  /** Stateful HTTP sessions (cancel by id over HTTP), when enabled. */
  sessions: HttpSessionRegistry | undefined;
}

export class RpcEndpoint<E extends Env> {
  /** What every request's Session is given (HTTP is stateless, §5.2), made once. */
  private readonly sessionOptions: SessionOptions;

  constructor(
    private readonly service: RcpService,
    private readonly options: EndpointOptions<E>,
  ) {
    this.sessionOptions = { transport: 'http', stateless: true, ...options.session };
  }

  /** Hono's route: the request as an exchange, the reply as a `Response`. */
  readonly handle = async (c: Context<E>): Promise<Response> => {
    // The principal is bound by the auth guard (core/auth), when auth is on.
    const reply = await this.serve(this.options.io.exchange(c, principalOf(c)));
    return reply instanceof Response ? reply : toResponse(reply);
  };

  /**
   * Answer one exchange. With `sse` false the answer is always JSON (`HttpReply`): a caller that
   * cannot stream passes it only for requests that did not ask for SSE, which answer JSON anyway.
   */
  serve(exchange: HttpExchange, sse?: true): Promise<HttpReply | Response>;
  serve(exchange: HttpExchange, sse: false): Promise<HttpReply>;
  async serve(exchange: HttpExchange, sse = true): Promise<HttpReply | Response> {
    const { maxBodyBytes } = this.options;
    const { headers } = exchange;
    if (!isJsonMediaType(headers['content-type'])) return envelopeFault(415, 'Content-Type must be application/json');
    const pathMethod = methodFromPath(exchange.path, this.options.base);
    if (pathMethod === null) return envelopeFault(400, 'the path is not valid percent-encoding');
    // The body is read before admission: a client dripping its body holds a connection (bounded by
    // the body timeout and the per-address cap), never an in-flight slot others need.
    let text: string | undefined;
    try {
      text = await exchange.readBody(maxBodyBytes);
    } catch (err) {
      if (err instanceof BodyTimeoutError) return envelopeFault(408, err.message);
      throw err;
    }
    if (text === undefined) return payloadTooLarge(maxBodyBytes);
    const envelope = readEnvelope(text, pathMethod);
    if ('status' in envelope) return envelope;
    const members = Array.isArray(envelope.value) ? envelope.value.length : 1;
    if (members > this.options.maxBatchSize) return batchTooLarge(members, this.options.maxBatchSize);
    // Every batch member is a request in flight (§11: one POST must not start more than the cap allows).
    const admission = this.options.admit?.(Math.max(1, members));
    if (admission && !admission.ok) return atCapacity(admission.retryAfterMs);
    // An SSE answer outlives this handler: it takes the admission slot over and frees it when the
    // stream ends, so graceful drain waits for live streams too.
    let released = false;
    const release = (): void => {
      if (released) return;
      released = true;
      if (admission?.ok) admission.release();
    };
    let handedOff = false;
    try {
      return await this.answer(exchange, envelope, sse, () => {
        handedOff = true;
        return release;
      });
    } finally {
      if (!handedOff) release();
    }
  }

  private answer(
    exchange: HttpExchange,
    envelope: Envelope,
    sse: boolean,
    takeRelease: () => () => void,
  ): HttpReply | Response | Promise<HttpReply | Response> {
    const { sessions } = this.options;
    const { headers, principal } = exchange;
    const { value } = envelope;
    // §7.14 over HTTP: with a session token, a posted cancel reaches the request it names.
    const sessionToken = sessions ? headers[SESSION_HEADER] : undefined;
    if (sessions && sessionToken !== undefined) for (const id of cancelIdsOf(value)) sessions.cancel(sessionToken, id);
    const session = new Session(this.service, principal ? { ...this.sessionOptions, principal } : this.sessionOptions);
    const tracked = sessions && sessionToken !== undefined ? sessions.track(sessionToken, requestIdsOf(value), session) : undefined;
    if (tracked && tracked.duplicates.length > 0 && !Array.isArray(value)) {
      tracked.release();
      return jsonReply(invalidRequest(tracked.duplicates[0]!, 'id is already in flight in this session'));
    }
    // Client went away before its answer (plain JSON or SSE): abort the call, and so its live legs.
    exchange.onClientGone(() => session.abortAll('disconnect'));
    const decorate = (reply: Reply): Reply => (sessions ? issueSessionToken(value, reply, sessions) : reply);
    const finished = (): void => tracked?.release();
    if (!sse || !this.wantsSse(value, headers)) return this.jsonAnswer(session, envelope, headers, decorate, finished);
    return sseReply(session, value, headers, {
      heartbeatMs: this.options.sseHeartbeatMs,
      release: takeRelease(),
      finished,
      decorate,
      ...(this.options.onStreamOpen ? { onOpen: this.options.onStreamOpen } : {}),
      ...(this.options.onStreamClose ? { onClose: this.options.onStreamClose } : {}),
    });
  }

  /** §5.2: SSE only when asked for and `streaming` is advertised; a notification has no answer to stream. */
  private wantsSse(value: unknown, headers: Record<string, string>): boolean {
    return (
      this.options.streaming &&
      !Array.isArray(value) &&
      classify(value).kind !== 'notification' &&
      (headers.accept ?? '').includes('text/event-stream') &&
      'streaming' in this.service.describe().capabilities
    );
  }

  /** One reaction on the session's answer (not async/await: every JSON request passes here). */
  private jsonAnswer(
    session: Session,
    envelope: Envelope,
    headers: Record<string, string>,
    decorate: (reply: Reply) => Reply,
    finished: () => void,
  ): HttpReply | Promise<HttpReply> {
    const { value, mismatched } = envelope;
    if (Array.isArray(value) && value.length === 0 && mismatched.length > 0) {
      finished();
      return jsonReplyOf(null, envelope);
    }
    // `handle` never throws: a fault comes back as a rejection, which releases below too.
    return session.handle({ value, headers }).then(
      (reply) => {
        let decorated: Reply;
        try {
          decorated = decorate(reply);
        } finally {
          finished();
        }
        return jsonReplyOf(decorated, envelope);
      },
      (err: unknown) => {
        finished();
        throw err;
      },
    );
  }
}

/** The JSON answer to a POST: the session's reply, with the answers to members the path refused (`mismatched`). */
function jsonReplyOf(reply: Reply, { compact, mismatched }: Envelope): HttpReply {
  if (mismatched.length > 0) reply = [...(Array.isArray(reply) ? reply : []), ...mismatched];
  if (reply === null) return NO_CONTENT; // notifications: no body
  if (compact && !Array.isArray(reply)) return jsonReply(compactOf(reply));
  return jsonReply(reply);
}
