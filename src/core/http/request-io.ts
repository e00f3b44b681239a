/**
 * How the HTTP transport reads one request and learns that its client went away. The endpoint
 * works on an `HttpExchange` (path, headers, body, disconnect); the web-standard app builds one
 * from Hono's `Request`, and a runtime can pass faster ways to build it from its own request
 * objects (the Node listener reads the socket directly, src/node/server/node-request-io.ts).
 */
import type { Context, Env, MiddlewareHandler } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import type { Principal } from '../auth/principal.js';

/** Thrown by `readBody` when the client went silent mid-body for longer than the body timeout (answered 408). */
export class BodyTimeoutError extends Error {
  constructor(readonly timeoutMs: number) {
    super(`request body stalled for ${timeoutMs} ms`);
    this.name = 'BodyTimeoutError';
  }
}

/** One HTTP request as the RCP endpoint sees it, whatever server read it. */
export interface HttpExchange {
  /** The request path, without the query. */
  readonly path: string;
  /** Lower-cased header map; repeated headers joined with ", " as `Headers` does. */
  readonly headers: Record<string, string>;
  /** Who the auth guard bound to the request, when auth is on. */
  readonly principal: Principal | undefined;
  /** The body as text; undefined once it exceeds `maxBytes`; rejects with BodyTimeoutError when it stalls. */
  readBody(maxBytes: number): Promise<string | undefined>;
  /** Calls `gone` if the client disconnects before its answer has been written. */
  onClientGone(gone: () => void): void;
}

/** Reads the body of the request behind `c`: undefined past `maxBytes`, BodyTimeoutError when it stalls. */
export type BodyReader<E extends Env> = (c: Context<E>, maxBytes: number) => Promise<string | undefined>;

export interface RequestIo<E extends Env> {
  /** Middleware in front of the endpoint that answers `tooLarge()` for a body over `maxBytes`. */
  limitBody(maxBytes: number, tooLarge: () => Response): MiddlewareHandler<E>;
  /** The request behind `c` as an exchange (`principal`: what the auth guard bound, if any). */
  exchange(c: Context<E>, principal: Principal | undefined): HttpExchange;
}

/** Web-standard request reading: any runtime that hands Hono a `Request`. */
export function webRequestIo<E extends Env>(): RequestIo<E> {
  return {
    limitBody: (maxBytes, tooLarge) => bodyLimit({ maxSize: maxBytes, onError: () => tooLarge() }),
    exchange: (c, principal) => ({
      path: c.req.path,
      headers: lowerHeaders(c.req.raw.headers),
      principal,
      // bodyLimit (above) already refuses a body over the cap while it is read.
      readBody: () => c.req.text(),
      onClientGone: (gone) => c.req.raw.signal.addEventListener('abort', gone, { once: true }),
    }),
  };
}

function lowerHeaders(headers: Headers): Record<string, string> {
  const out: Record<string, string> = {};
  headers.forEach((value, key) => {
    out[key] = value;
  });
  return out;
}
