/**
 * The direct lane of the Node listener: a plain JSON `POST <base>[/<method>]` that nothing in the
 * app but the RCP endpoint would see (no CORS, no auth guard, no other route there:
 * `RcpHttpApp.endpointOnly`) is read and answered on node's own request and response objects,
 * by the same endpoint code (`RpcEndpoint.serve`), after the same body-limit check.
 *
 * What it skips is the web framework's per-request work: a Request proxy, routing, the
 * middleware chain, a Response object and its conversion back to node's response. Everything
 * else takes the usual route through Hono: other methods and paths, a request that asks for SSE
 * (`Accept: text/event-stream`), any path Hono would rewrite before routing (percent-encoding,
 * dot segments, an absolute-form target) and any Host header it would have to parse, so both
 * routes see the same request and refuse the same ones.
 *
 * What the app's adapter does around a handler, the lane does too: a body left unread by an
 * early answer (415, a bad path) is drained for at most 500 ms and 64 MB, then the connection is
 * closed (as @hono/node-server's `drainIncoming`), so a client cannot keep pushing an unbounded
 * body after its answer.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { INTERNAL_ERROR, payloadTooLarge, type HttpReply } from '../../core/http/envelope.js';
import type { RpcEndpoint } from '../../core/http/endpoint.js';
import { declaredTooLarge, nodeExchange, responseGone, type BodyReading, type NodeHttpEnv } from './node-request-io.js';

/** Handles the request and returns true, or returns false and leaves it to the app. */
export type DirectLane = (incoming: IncomingMessage, outgoing: ServerResponse) => boolean;

export interface DirectLaneOptions {
  endpoint: RpcEndpoint<NodeHttpEnv>;
  /** The RCP base path, without a trailing slash ('' for the root). */
  base: string;
  maxBodyBytes: number;
  reading: BodyReading;
  /**
   * A request that failed while being answered: a fault of the gateway's own code (the client
   * gets a 500, as from the app), or the client gone mid-request (`clientGone`: nothing to answer).
   */
  onError: (err: unknown, clientGone: boolean) => void;
}

export function directLane(options: DirectLaneOptions): DirectLane {
  const { endpoint, base, maxBodyBytes, reading, onError } = options;
  return (incoming, outgoing) => {
    if (incoming.method !== 'POST') return false;
    const path = lanePath(incoming.url, base);
    if (path === undefined || !plainHost(incoming.headers.host)) return false;
    const accept = incoming.headers.accept;
    if (accept !== undefined && accept.includes('text/event-stream')) return false;
    if (declaredTooLarge(incoming, maxBodyBytes)) {
      writeReply(incoming, outgoing, payloadTooLarge(maxBodyBytes));
      return true;
    }
    endpoint.serve(nodeExchange(incoming, outgoing, path, undefined, reading), false).then(
      (reply) => writeReply(incoming, outgoing, reply),
      (err: unknown) => {
        const clientGone = responseGone(outgoing);
        onError(err, clientGone);
        if (!clientGone) writeReply(incoming, outgoing, INTERNAL_ERROR);
      },
    );
    return true;
  };
}

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

/**
 * A Host header the app's adapter takes as it is (a name or address of `[A-Za-z0-9._-]` with an
 * optional port 0–65535), or none (the adapter uses the listener's own). Anything else is left to
 * the app, which parses it and refuses what does not parse (400).
 */
export function plainHost(host: string | undefined): boolean {
  if (host === undefined) return true;
  const match = PLAIN_HOST.exec(host);
  return match !== null && (match[1] === undefined || Number(match[1]) <= 65_535);
}

const PLAIN_HOST = /^[A-Za-z0-9._-]+(?::([0-9]{1,5}))?$/;

/** The reply as the app would write it: its headers, the length, the body in one write. */
function writeReply(incoming: IncomingMessage, outgoing: ServerResponse, reply: HttpReply): void {
  if (outgoing.headersSent || outgoing.destroyed) return;
  if (!incoming.readableEnded) outgoing.once('finish', () => drainUnread(incoming));
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

/** As @hono/node-server's adapter: what the client still sends of an unread body is read and dropped for so long, then the connection closes. */
const DRAIN_TIMEOUT_MS = 500;
const MAX_DRAIN_BYTES = 64 * 1024 * 1024;

/** Read and drop the rest of a body the answer did not need, within the drain limits; past them, close the connection. */
function drainUnread(incoming: IncomingMessage): void {
  if (incoming.readableEnded || incoming.destroyed) return;
  let bytes = 0;
  const cleanup = (): void => {
    clearTimeout(timer);
    incoming.off('data', onData);
    incoming.off('end', cleanup);
    incoming.off('error', cleanup);
  };
  const close = (): void => {
    cleanup();
    if (!incoming.socket.destroyed) incoming.socket.destroySoon();
  };
  const onData = (chunk: Buffer): void => {
    bytes += chunk.length;
    if (bytes > MAX_DRAIN_BYTES) close();
  };
  const timer = setTimeout(close, DRAIN_TIMEOUT_MS);
  timer.unref();
  incoming.on('data', onData);
  incoming.on('end', cleanup);
  incoming.on('error', cleanup);
  incoming.resume();
}
