/**
 * How the HTTP transport reads one request and learns that its client went away. The app is
 * web-standard (Hono on `Request`/`Response`); a runtime can pass faster paths that read its own
 * request objects (the Node listener reads the socket directly, src/node/server/node-request-io.ts).
 */
import type { Context, Env, MiddlewareHandler } from 'hono';
import { bodyLimit } from 'hono/body-limit';

/** Thrown by `readBody` when the client went silent mid-body for longer than the body timeout (answered 408). */
export class BodyTimeoutError extends Error {
  constructor(readonly timeoutMs: number) {
    super(`request body stalled for ${timeoutMs} ms`);
    this.name = 'BodyTimeoutError';
  }
}

export interface RequestIo<E extends Env> {
  /** Middleware in front of the endpoint that answers `tooLarge()` for a body over `maxBytes`. */
  limitBody(maxBytes: number, tooLarge: () => Response): MiddlewareHandler<E>;
  /** The body as text; undefined once it exceeds `maxBytes`; rejects with BodyTimeoutError when it stalls. */
  readBody(c: Context<E>, maxBytes: number): Promise<string | undefined>;
  /** Lower-cased header map; repeated headers joined with ", " as `Headers` does. */
  headers(c: Context<E>): Record<string, string>;
  /** Calls `gone` if the client disconnects before its answer has been written. */
  onClientGone(c: Context<E>, gone: () => void): void;
}

/** Web-standard request reading: any runtime that hands Hono a `Request`. */
export function webRequestIo<E extends Env>(): RequestIo<E> {
  return {
    limitBody: (maxBytes, tooLarge) => bodyLimit({ maxSize: maxBytes, onError: () => tooLarge() }),
    // bodyLimit (above) already refuses a body over the cap while it is read.
    readBody: (c) => c.req.text(),
    headers: (c) => lowerHeaders(c.req.raw.headers),
    onClientGone: (c, gone) => c.req.raw.signal.addEventListener('abort', gone, { once: true }),
  };
}

function lowerHeaders(headers: Headers): Record<string, string> {
  const out: Record<string, string> = {};
  headers.forEach((value, key) => {
    out[key] = value;
  });
  return out;
}
