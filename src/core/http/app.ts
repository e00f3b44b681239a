/**
 * Inbound HTTP transport (§5.2) as a Hono app: `POST <base>/<method>` (and `POST <base>` for
 * batches), JSON or SSE answers, status mapping, body cap, CORS. Moves bytes only; the Session
 * (one per request: HTTP is stateless, §5.2) does the protocol.
 */
import { Hono, type Context } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { cors } from 'hono/cors';
import type { HttpBindings } from '@hono/node-server';
import { ErrorCode } from '../protocol/errors.js';
import { classify, errorResponse, invalidRequest, isJsonObject, parseErrorResponse, type NotificationMessage, type ResponseMessage } from '../protocol/jsonrpc.js';
import { HttpSessionRegistry, SESSION_HEADER, cancelIdsOf, requestIdsOf, type HttpSessionSettings } from '../session/http-sessions.js';
import { Session, type SessionOptions } from '../session/session.js';
import type { RcpService } from '../service/contract.js';

export interface HttpServerOptions {
  basePath: string;
  maxBodyBytes: number;
  /** Interval of SSE comment heartbeats on long calls. */
  sseHeartbeatMs: number;
  /** Whether SSE may be used at all; it is also used only while `streaming` is advertised (§5.2). */
  streaming: boolean;
  /** Optional stateful HTTP sessions (cancel by id over HTTP); absent = stateless only. */
  httpSessions?: HttpSessionSettings;
  corsOrigins: string[];
  /** Gate evaluated before the body is read: answer 429 when the gateway is saturated (never seen by JSON-RPC). */
  admit?: () => { ok: true; release: () => void } | { ok: false; retryAfterMs: number };
  session?: Partial<SessionOptions>;
  /** Extra routes (health, metrics) mounted beside the RCP endpoint. */
  extend?: (app: Hono<{ Bindings: HttpBindings }>) => void;
  onStreamOpen?: () => void;
  onStreamClose?: () => void;
}

const JSON_HEADERS = { 'content-type': 'application/json' } as const;

export function createHttpApp(service: RcpService, options: HttpServerOptions): Hono<{ Bindings: HttpBindings }> {
  const app = new Hono<{ Bindings: HttpBindings }>();
  const base = options.basePath.replace(/\/+$/, '') || '';
  const sessions = options.httpSessions ? new HttpSessionRegistry(options.httpSessions) : undefined;

  if (options.corsOrigins.length > 0) {
    app.use(`${base}/*`, cors({
      origin: options.corsOrigins.includes('*') ? '*' : options.corsOrigins,
      allowMethods: ['POST', 'OPTIONS'],
      allowHeaders: ['content-type', 'accept', 'authorization', 'traceparent', 'tracestate', 'rcp-session', 'x-rcpgw-engine'],
      maxAge: 600,
    }));
  }
  options.extend?.(app);

  // §12 -32013 PayloadTooLarge; the JSON-RPC layer never saw the body, so 413 (§5.2 transport fault).
  const tooLarge = (c: Context<{ Bindings: HttpBindings }>): Response => c.json(errorResponse(null, {
    code: ErrorCode.PayloadTooLarge,
    message: 'payload too large',
    data: { detail: `request body exceeds ${options.maxBodyBytes} bytes` },
  }), 413, { connection: 'close' }); // the rest of the body is not read: the socket cannot be reused
  const webLimit = bodyLimit({ maxSize: options.maxBodyBytes, onError: tooLarge });
  // On Node the cap is checked on the node request itself (declared length here, streamed bytes in
  // readBody): Hono's bodyLimit would build a web Request and body stream for every call.
  const limit = (c: Context<{ Bindings: HttpBindings }>, next: () => Promise<void>): Promise<Response | void> => {
    const incoming = c.env?.incoming;
    if (!incoming) return webLimit(c, next);
    const declared = incoming.headers['content-length'];
    if (declared !== undefined && incoming.headers['transfer-encoding'] === undefined && Number(declared) > options.maxBodyBytes) {
      return Promise.resolve(tooLarge(c));
    }
    return next();
  };

  const handler = async (c: Context<{ Bindings: HttpBindings }>): Promise<Response> => {
    const pathMethod = methodFromPath(c.req.path, base);
    const admission = options.admit?.();
    if (admission && !admission.ok) {
      const seconds = Math.max(1, Math.ceil(admission.retryAfterMs / 1000));
      return new Response(JSON.stringify(errorResponse(null, {
        code: ErrorCode.RateLimited, message: 'gateway is at capacity',
        data: { retryable: true, retryAfterMs: admission.retryAfterMs },
      })), { status: 429, headers: { ...JSON_HEADERS, 'retry-after': String(seconds) } });
    }
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
      return await answer(c, pathMethod, () => {
        handedOff = true;
        return release;
      });
    } finally {
      if (!handedOff) release();
    }
  };

  const answer = async (
    c: Context<{ Bindings: HttpBindings }>,
    pathMethod: string | undefined,
    takeRelease: () => () => void,
  ): Promise<Response> => {
    const text = await readBody(c, options.maxBodyBytes);
    if (text === undefined) return tooLarge(c);
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      // §5.2: an unparseable body is HTTP 400 with a -32700 body.
      return new Response(JSON.stringify(parseErrorResponse('body is not valid JSON')), { status: 400, headers: JSON_HEADERS });
    }
    let compact = false;
    if (isJsonObject(value) && value.jsonrpc === undefined && typeof value.method === 'string') {
      // §5.3 compact {method, params} envelope: upgraded to a JSON-RPC request. Without an id we
      // answer in the same compact shape ({result} | {error}) since there is no id to echo.
      compact = value.id === undefined;
      value = { jsonrpc: '2.0', id: value.id ?? 0, method: value.method, params: value.params ?? {} };
    }
    // §5.2: the method in the URL path MUST match the body's method (-32600 otherwise).
    const mismatched: ResponseMessage[] = [];
    if (pathMethod !== undefined) {
      if (!Array.isArray(value)) {
        const mismatch = methodMismatch(value, pathMethod);
        if (mismatch) return jsonReply(mismatch);
      } else if (value.length > 0) {
        value = value.filter((member) => {
          const mismatch = methodMismatch(member, pathMethod);
          if (mismatch) mismatched.push(mismatch);
          return !mismatch;
        });
      }
    }

    const headers = c.env?.incoming ? nodeHeaders(c.env.incoming.rawHeaders) : lowerHeaders(c.req.raw.headers);
    const outgoing = c.env?.outgoing;
    // §7.14 over HTTP: with a session token, a posted cancel reaches the request it names.
    const sessionToken = sessions ? headers[SESSION_HEADER] : undefined;
    if (sessions && sessionToken !== undefined) for (const id of cancelIdsOf(value)) sessions.cancel(sessionToken, id);
    // §5.2: SSE only when asked for and `streaming` is advertised; a notification has no answer to stream.
    const wantsSse = options.streaming
      && !Array.isArray(value)
      && classify(value).kind !== 'notification'
      && (headers.accept ?? '').includes('text/event-stream')
      && 'streaming' in service.describe().capabilities;
    const session = new Session(service, { transport: 'http', stateless: true, ...options.session });
    const tracked = sessions && sessionToken !== undefined ? sessions.track(sessionToken, requestIdsOf(value), session) : undefined;
    if (tracked && tracked.duplicates.length > 0 && !Array.isArray(value)) {
      tracked.release();
      return jsonReply(invalidRequest(tracked.duplicates[0]!, 'id is already in flight in this session'));
    }
    // Client went away before its answer (plain JSON or SSE): abort the call, and so its live legs.
    const onDisconnect = (): void => {
      if (outgoing && !outgoing.writableFinished) session.abortAll('disconnect');
    };
    outgoing?.once('close', onDisconnect);
    const withToken = (reply: ResponseMessage | ResponseMessage[] | null): ResponseMessage | ResponseMessage[] | null =>
      sessions ? issueSessionToken(value, reply, sessions) : reply;

    if (!wantsSse) {
      let reply: ResponseMessage | ResponseMessage[] | null;
      try {
        reply = Array.isArray(value) && value.length === 0 && mismatched.length > 0 ? null : withToken(await session.handle({ value, headers }));
      } finally {
        tracked?.release();
      }
      if (mismatched.length > 0) reply = [...(Array.isArray(reply) ? reply : []), ...mismatched];
      if (reply === null) return new Response(null, { status: 204 }); // notifications: no body
      if (compact && !Array.isArray(reply)) return jsonReply(compactOf(reply));
      return jsonReply(reply);
    }
    return sseReply(session, value, headers, options, {
      release: takeRelease(),
      finished: () => tracked?.release(),
      decorate: withToken,
    });
  };

  app.post(`${base}`, limit, handler);
  app.post(`${base}/*`, limit, handler);
  return app;
}

function jsonReply(body: unknown): Response {
  // §5.2: every well-formed JSON-RPC response, errors included, is HTTP 200.
  return new Response(JSON.stringify(body), { status: 200, headers: JSON_HEADERS });
}

function compactOf(reply: ResponseMessage): Record<string, unknown> {
  return 'error' in reply ? { error: reply.error } : { result: reply.result };
}

/** `<base>/index/add` → `index/add`; the base path itself → undefined (method from the body). */
function methodFromPath(path: string, base: string): string | undefined {
  const rest = path.slice(base.length).replace(/^\/+/, '');
  return rest.length > 0 ? decodeURIComponent(rest) : undefined;
}

function methodMismatch(member: unknown, pathMethod: string): ResponseMessage | undefined {
  if (!isJsonObject(member) || typeof member.method !== 'string' || member.method === pathMethod) return undefined;
  // A notification with the wrong method is dropped silently: notifications are never answered (§4.5).
  if (member.id === undefined) return undefined;
  const id = typeof member.id === 'string' || typeof member.id === 'number' ? member.id : null;
  return errorResponse(id, {
    code: ErrorCode.InvalidRequest,
    message: 'invalid request: path method does not match body method',
    data: { detail: `path says ${pathMethod}, body says ${member.method}` },
  });
}

const utf8 = new TextDecoder(); // as Request.text(): invalid bytes → U+FFFD, a leading BOM dropped

/**
 * The body as text, read off the node request (no web Request or stream is built per call);
 * undefined once it exceeds `maxBytes` (a chunked body has no declared length to check first).
 */
function readBody(c: Context<{ Bindings: HttpBindings }>, maxBytes: number): Promise<string | undefined> {
  const incoming = c.env?.incoming;
  if (!incoming) return c.req.text();
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const done = (): void => {
      incoming.off('data', onData);
      incoming.off('end', onEnd);
      incoming.off('error', onError);
      incoming.off('close', onClose);
    };
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size > maxBytes) {
        done();
        resolve(undefined);
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = (): void => {
      done();
      resolve(utf8.decode(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, size)));
    };
    const onError = (err: Error): void => {
      done();
      reject(err);
    };
    const onClose = (): void => {
      if (incoming.readableEnded) return onEnd();
      done();
      reject(new Error('client closed the connection before the body ended'));
    };
    incoming.on('data', onData);
    incoming.on('end', onEnd);
    incoming.on('error', onError);
    incoming.on('close', onClose);
  });
}

/** Lower-cased header map from node's raw [name, value, …] list; repeats joined with ", " as Headers does. */
function nodeHeaders(raw: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (let i = 0; i < raw.length; i += 2) {
    const key = raw[i]!.toLowerCase();
    if (key === '__proto__') continue; // not a header anyone sends; it would not land in a plain object
    const value = raw[i + 1]!;
    out[key] = Object.hasOwn(out, key) ? `${out[key]}, ${value}` : value;
  }
  return out;
}

function lowerHeaders(headers: Headers): Record<string, string> {
  const out: Record<string, string> = {};
  headers.forEach((value, key) => {
    out[key] = value;
  });
  return out;
}

/** `initialize` answered over HTTP with sessions enabled: hand out a token in `_meta.session` (§5.2). */
function issueSessionToken(
  value: unknown,
  reply: ResponseMessage | ResponseMessage[] | null,
  sessions: HttpSessionRegistry,
): ResponseMessage | ResponseMessage[] | null {
  if (reply === null || Array.isArray(reply) || !('result' in reply)) return reply;
  if (!isJsonObject(value) || value.method !== 'initialize') return reply;
  const meta = isJsonObject(reply.result._meta) ? reply.result._meta : {};
  return { ...reply, result: { ...reply.result, _meta: { ...meta, session: sessions.open() } } };
}

interface SseLifecycle {
  /** Frees the admission slot (once, when the stream ends either way). */
  release: () => void;
  /** The request has been answered (or abandoned): stop tracking its id. */
  finished: () => void;
  decorate: (reply: ResponseMessage | ResponseMessage[] | null) => ResponseMessage | ResponseMessage[] | null;
}

/**
 * §5.2 SSE answer: zero or more `notifications/progress` (and opted-in `notifications/log`)
 * frames, then exactly one final frame with the response, then the stream ends. Each frame is
 * one `data:` line of compact JSON and a blank line, enqueued (and so flushed by the node
 * adapter) as soon as it is produced. `: keep-alive` comments keep idle proxies from timing
 * the stream out. A client that goes away aborts the call; nothing is written after that.
 */
function sseReply(
  session: Session,
  value: unknown,
  headers: Record<string, string>,
  options: HttpServerOptions,
  lifecycle: SseLifecycle,
): Response {
  const encoder = new TextEncoder();
  let heartbeat: ReturnType<typeof setInterval> | undefined;
  let open = true;
  let closed = false;
  // Runs once, whichever way the stream ends (final frame written, or client gone).
  const end = (): void => {
    open = false;
    clearInterval(heartbeat);
    if (closed) return;
    closed = true;
    lifecycle.finished();
    lifecycle.release();
    options.onStreamClose?.();
  };
  const stream = new ReadableStream<Uint8Array>({
    start(controller) {
      options.onStreamOpen?.();
      const send = (text: string): void => {
        if (!open) return;
        try {
          controller.enqueue(encoder.encode(text));
        } catch {
          open = false;
        }
      };
      // §5.2: one `data:` line per frame, compact JSON, blank line terminator.
      const sink = (frame: NotificationMessage): void => send(`data: ${JSON.stringify(frame)}\n\n`);
      heartbeat = setInterval(() => send(': keep-alive\n\n'), options.sseHeartbeatMs);
      heartbeat.unref?.();
      void session.handle({ value, sink, headers }).then((answer) => {
        const reply = lifecycle.decorate(answer);
        if (reply !== null) send(`data: ${JSON.stringify(reply)}\n\n`);
        end();
        try {
          controller.close();
        } catch {
          // The client cancelled the stream first; closing it again throws.
        }
      });
    },
    cancel() {
      end();
      session.abortAll('disconnect');
    },
  });
  return new Response(stream, {
    status: 200,
    headers: {
      'content-type': 'text/event-stream; charset=utf-8',
      // no-transform: intermediaries must not compress or otherwise rewrite the stream.
      'cache-control': 'no-cache, no-transform',
      'x-accel-buffering': 'no', // proxies (nginx) must not buffer the stream
    },
  });
}
