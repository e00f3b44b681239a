/**
 * The HTTP body as JSON-RPC (§5.2, §5.3): parsing, the compact `{method, params}` envelope, the
 * path-method check, and the fixed replies (200 JSON, 413, 429, 400) the endpoint sends. A reply
 * is a plain `HttpReply` (status, headers, text): the web adapter turns it into a `Response`
 * (`toResponse`), a runtime's direct lane writes it to its own response object.
 */
import { ErrorCode } from '../protocol/errors.js';
import { errorResponse, invalidRequest, isJsonObject, parseErrorResponse, type ResponseMessage } from '../protocol/jsonrpc.js';
import type { HttpSessionRegistry } from '../session/http-sessions.js';

const JSON_HEADERS: Readonly<Record<string, string>> = Object.freeze({ 'content-type': 'application/json' });

/** One complete HTTP answer: status, headers (lower-case names) and a text body (`null`: none). */
export interface HttpReply {
  status: number;
  headers: Readonly<Record<string, string>>;
  body: string | null;
}

/** The reply as a web `Response` (Hono's handlers return these). */
export function toResponse(reply: HttpReply): Response {
  return new Response(reply.body, { status: reply.status, headers: reply.headers });
}

/** A fault in a handler (not a JSON-RPC error: the request never reached one): 500, as Hono's default error handler answers. */
export const INTERNAL_ERROR: HttpReply = Object.freeze({
  status: 500,
  headers: Object.freeze({ 'content-type': 'text/plain; charset=UTF-8' }),
  body: 'Internal Server Error',
});

/** 204 No Content: a body of notifications only (§5.2). */
export const NO_CONTENT: HttpReply = Object.freeze({ status: 204, headers: Object.freeze({}), body: null });

/** A parsed body, ready for the session. */
export interface Envelope {
  /** A JSON-RPC message or batch. */
  value: unknown;
  /** The body used the compact envelope without an id: answer `{result}` | `{error}`. */
  compact: boolean;
  /** Batch members whose method did not match the path: answered -32600 beside the rest. */
  mismatched: ResponseMessage[];
}

/** §5.2: an unparseable body is HTTP 400 with a -32700 body. */
export const NOT_JSON: HttpReply = Object.freeze({
  status: 400,
  headers: JSON_HEADERS,
  body: JSON.stringify(parseErrorResponse('body is not valid JSON')),
});

/** Parse the body; an HttpReply when it is answered without the session (bad JSON, path mismatch). */
export function readEnvelope(text: string, pathMethod: string | undefined): Envelope | HttpReply {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return NOT_JSON;
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
  return { value, compact, mismatched };
}

export function jsonReply(body: unknown): HttpReply {
  // §5.2: every well-formed JSON-RPC response, errors included, is HTTP 200.
  return { status: 200, headers: JSON_HEADERS, body: JSON.stringify(body) };
}

export function compactOf(reply: ResponseMessage): Record<string, unknown> {
  return 'error' in reply ? { error: reply.error } : { result: reply.result };
}

/** §12 -32013 PayloadTooLarge; the JSON-RPC layer never saw the body, so 413 (§5.2 transport fault). */
export function payloadTooLarge(maxBytes: number): HttpReply {
  return {
    status: 413,
    // The rest of the body is not read: the connection cannot be reused.
    headers: { ...JSON_HEADERS, connection: 'close' },
    body: JSON.stringify(
      errorResponse(null, {
        code: ErrorCode.PayloadTooLarge,
        message: 'payload too large',
        data: { detail: `request body exceeds ${maxBytes} bytes` },
      }),
    ),
  };
}

/** The gateway is saturated: 429 with Retry-After, before the body is read (never seen by JSON-RPC). */
export function atCapacity(retryAfterMs: number): HttpReply {
  const seconds = Math.max(1, Math.ceil(retryAfterMs / 1000));
  return {
    status: 429,
    headers: { ...JSON_HEADERS, 'retry-after': String(seconds) },
    body: JSON.stringify(
      errorResponse(null, {
        code: ErrorCode.RateLimited,
        message: 'gateway is at capacity',
        data: { retryable: true, retryAfterMs },
      }),
    ),
  };
}

/**
 * `<base>/index/add` → `index/add`; the base path itself → undefined (method from the body); a
 * path that does not percent-decode → null (answered 400, never a 500).
 */
export function methodFromPath(path: string, base: string): string | undefined | null {
  let from = base.length;
  while (path.charCodeAt(from) === 0x2f /* / */) from++;
  if (from >= path.length) return undefined;
  const rest = path.slice(from);
  // Nothing to decode without a `%` (decodeURIComponent would return the same text).
  if (!rest.includes('%')) return rest;
  try {
    return decodeURIComponent(rest);
  } catch {
    return null;
  }
}

/** A fault in the HTTP envelope itself (bad path, wrong media type, stalled body): a JSON error with that status. */
export function envelopeFault(status: 400 | 408 | 415, detail: string): HttpReply {
  const headers = status === 408 ? { ...JSON_HEADERS, connection: 'close' } : JSON_HEADERS;
  return { status, headers, body: JSON.stringify(invalidRequest(null, detail)) };
}

/**
 * POST bodies must be declared `application/json` (parameters such as charset allowed): a
 * cross-site "simple" request (text/plain, form encodings) then cannot reach a method, since a
 * browser must preflight the JSON type, and CORS decides.
 */
export function isJsonMediaType(contentType: string | undefined): boolean {
  if (contentType === undefined) return false;
  // What nearly every client sends, answered without the split, trim and lower-casing below.
  if (contentType === 'application/json') return true;
  return contentType.split(';', 1)[0]!.trim().toLowerCase() === 'application/json';
}

/** A batch over the size cap: refused whole before any member runs (§11, §12 -32013, §15.5). */
export function batchTooLarge(size: number, maxBatchSize: number): HttpReply {
  return {
    status: 413,
    headers: JSON_HEADERS,
    body: JSON.stringify(
      errorResponse(null, {
        code: ErrorCode.PayloadTooLarge,
        message: `batch too large: ${size} members, at most ${maxBatchSize} accepted`,
        data: { detail: `split the batch into batches of at most ${maxBatchSize} members` },
      }),
    ),
  };
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

/** `initialize` answered over HTTP with sessions enabled: hand out a token in `_meta.session` (§5.2). */
export function issueSessionToken(
  value: unknown,
  reply: ResponseMessage | ResponseMessage[] | null,
  sessions: HttpSessionRegistry,
): ResponseMessage | ResponseMessage[] | null {
  if (reply === null || Array.isArray(reply) || !('result' in reply)) return reply;
  if (!isJsonObject(value) || value.method !== 'initialize') return reply;
  const meta = isJsonObject(reply.result._meta) ? reply.result._meta : {};
  return { ...reply, result: { ...reply.result, _meta: { ...meta, session: sessions.open() } } };
}
