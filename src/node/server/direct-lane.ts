/**
 * The direct lane of the Node listener: a plain JSON `POST <base>[/<method>]` that nothing in the
 * app but the RCP endpoint would see (no CORS, no auth guard, no other route there:
 * `RcpHttpApp.endpointOnly`) is read and answered on node's own request and response objects,
 * by the same endpoint code (`RpcEndpoint.serve`), after the same body-limit check.
 *
 * What it skips is the web framework's per-request work: a Request proxy, routing, the
 * middleware chain, a Response object and its conversion back to node's response. Everything
 * else takes the usual route through Hono: other methods and paths, a request that asks for SSE
 * (`Accept: text/event-stream`), and any path Hono would rewrite before routing (percent-encoding,
 * dot segments, an absolute-form target), so both routes see the same path.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { payloadTooLarge, type HttpReply } from '../../core/http/envelope.js';
import type { RpcEndpoint } from '../../core/http/endpoint.js';
import { declaredTooLarge, nodeExchange, type BodyReading, type NodeHttpEnv } from './node-request-io.js';

/** Handles the request and returns true, or returns false and leaves it to the app. */
export type DirectLane = (incoming: IncomingMessage, outgoing: ServerResponse) => boolean;

export interface DirectLaneOptions {
  endpoint: RpcEndpoint<NodeHttpEnv>;
  /** The RCP base path, without a trailing slash ('' for the root). */
  base: string;
  maxBodyBytes: number;
  reading: BodyReading;
  /** A fault of the gateway's own code while answering (the client gets a 500, as from the app). */
  onError: (err: unknown) => void;
}

export function directLane(options: DirectLaneOptions): DirectLane {
  const { endpoint, base, maxBodyBytes, reading, onError } = options;
  return (incoming, outgoing) => {
    if (incoming.method !== 'POST') return false;
    const path = lanePath(incoming.url, base);
    if (path === undefined) return false;
    const accept = incoming.headers.accept;
    if (accept !== undefined && accept.includes('text/event-stream')) return false;
    if (declaredTooLarge(incoming, maxBodyBytes)) {
      writeReply(outgoing, payloadTooLarge(maxBodyBytes));
      return true;
    }
    endpoint.serve(nodeExchange(incoming, outgoing, path, undefined, reading), false).then(
      (reply) => writeReply(outgoing, reply),
      (err: unknown) => {
        onError(err);
        writeReply(outgoing, INTERNAL_ERROR);
      },
    );
    return true;
  };
}

/** What the app answers for an exception in a handler (Hono's default error handler). */
const INTERNAL_ERROR: HttpReply = Object.freeze({
  status: 500,
  headers: Object.freeze({ 'content-type': 'text/plain; charset=UTF-8' }),
  body: 'Internal Server Error',
});

/**
 * The path of an origin-form target under `base`, query dropped; undefined for anything else,
 * and for a path Hono would decode or normalise (so the lane never sees a different path).
 */
export function lanePath(url: string | undefined, base: string): string | undefined {
  if (url === undefined) return undefined;
  let end = url.length;
  for (let i = 0; i < url.length; i++) {
    const code = url.charCodeAt(i);
    if (code === 0x3f /* ? */ || code === 0x23 /* # */) {
      end = i;
      break;
    }
    if (!LANE_PATH_CHAR[code]) return undefined;
  }
  const path = end === url.length ? url : url.slice(0, end);
  if (path.charCodeAt(0) !== 0x2f /* / */ || path.includes('/.')) return undefined;
  if (path === base) return path;
  // Under the base: `<base>/…` (with the root as base, every path).
  return path.startsWith(base) && path.charCodeAt(base.length) === 0x2f ? path : undefined;
}

/** Path characters that neither Hono nor a URL parser rewrites: letters, digits, `/ - _ . ~`. */
const LANE_PATH_CHAR: readonly boolean[] = (() => {
  const ok: boolean[] = new Array<boolean>(128).fill(false);
  for (const c of 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/-_.~') ok[c.charCodeAt(0)] = true;
  return ok;
})();

/** The reply as the app would write it: its headers, the length, the body in one write. */
function writeReply(outgoing: ServerResponse, reply: HttpReply): void {
  if (outgoing.headersSent || outgoing.destroyed) return;
  if (reply.body === null) {
    outgoing.writeHead(reply.status, reply.headers);
    outgoing.end();
    return;
  }
  const headers: Record<string, string | number> = { 'content-length': Buffer.byteLength(reply.body) };
  for (const name in reply.headers) headers[name] = reply.headers[name]!;
  outgoing.writeHead(reply.status, headers);
  outgoing.end(reply.body);
}
