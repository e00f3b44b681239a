/**
 * Request reading on Node (@hono/node-server): the body is read off the node request itself and
 * headers come from its raw list, so no web Request or body stream is built per call; the cap is
 * checked on the declared length first and on the streamed bytes as they arrive. A request that
 * did not come through the node listener (e.g. `app.fetch` called directly) is read the
 * web-standard way. The direct lane (direct-lane.ts) builds the same exchange without Hono.
 */
import type { HttpBindings } from '@hono/node-server';
import type { Context } from 'hono';
import type { ServerResponse } from 'node:http';
import type { Principal } from '../../core/auth/principal.js';
import { BodyTimeoutError, webRequestIo, type HttpExchange, type RequestIo } from '../../core/http/request-io.js';
import type { ListenerObserver } from './listener-guard.js';

export type NodeHttpEnv = { Bindings: HttpBindings };
type NodeContext = Context<NodeHttpEnv>;
type IncomingMessage = HttpBindings['incoming'];

const utf8 = new TextDecoder(); // as Request.text(): invalid bytes → U+FFFD, a leading BOM dropped

export function nodeRequestIo(reading: BodyReading): RequestIo<NodeHttpEnv> {
  const web = webRequestIo<NodeHttpEnv>();
  return {
    limitBody: (maxBytes, tooLarge) => {
      const webLimit = web.limitBody(maxBytes, tooLarge);
      return (c, next) => {
        const incoming = incomingOf(c);
        if (!incoming) return webLimit(c, next);
        if (declaredTooLarge(incoming, maxBytes)) return Promise.resolve(tooLarge());
        return next();
      };
    },
    exchange: (c, principal) => {
      const { incoming, outgoing } = bindingsOf(c);
      if (!incoming || !outgoing) return web.exchange(c, principal);
      return nodeExchange(incoming, outgoing, c.req.path, principal, reading);
    },
  };
}

/** How bodies are read: the idle timeout and who is told. */
export interface BodyReading {
  /** Longest silence between two reads of a body (nginx's client_body_timeout), then BodyTimeoutError; 0 = no limit. */
  idleMs: number;
  observer: ListenerObserver;
}

/** A declared Content-Length over the cap (a chunked body is checked as it streams, in readBody). */
export function declaredTooLarge(incoming: IncomingMessage, maxBytes: number): boolean {
  const declared = incoming.headers['content-length'];
  return declared !== undefined && incoming.headers['transfer-encoding'] === undefined && Number(declared) > maxBytes;
}

/**
 * The client can no longer get an answer: the response's socket is gone. (Not `incoming.destroyed`:
 * node destroys a request once its body has been read to the end.)
 */
export function responseGone(outgoing: ServerResponse): boolean {
  return outgoing.destroyed || (outgoing.socket?.destroyed ?? true);
}

/** One node request/response pair as the endpoint's exchange. */
export function nodeExchange(
  incoming: IncomingMessage,
  outgoing: ServerResponse,
  path: string,
  principal: Principal | undefined,
  reading: BodyReading,
): HttpExchange {
  return {
    path,
    headers: nodeHeaders(incoming.rawHeaders),
    principal,
    readBody: (maxBytes) => readIncoming(incoming, maxBytes, reading.idleMs, reading.observer),
    onClientGone: (gone) => {
      // `on`, not `once`: a response closes once, and `once` would add a wrapper and a removal per request.
      // (Were 'close' ever emitted twice, `gone` aborts a session, which is idempotent.)
      outgoing.on('close', () => {
        if (!outgoing.writableFinished) gone();
      });
    },
  };
}

/** The node request/response pair; absent when the app was not called by the node listener. */
function bindingsOf(c: NodeContext): Partial<HttpBindings> {
  return (c.env as HttpBindings | undefined) ?? {};
}

function incomingOf(c: NodeContext): IncomingMessage | undefined {
  return bindingsOf(c).incoming;
}

/**
 * The body as text, or undefined once it exceeds `maxBytes` (a chunked body has no declared length
 * to check first); rejects with BodyTimeoutError after `idleMs` without a byte (0 = no limit).
 * One idle timer per read, pushed back on each chunk (`refresh`), and the observer told when
 * the read starts and ends.
 */
function readIncoming(
  incoming: IncomingMessage,
  maxBytes: number,
  idleMs: number,
  observer: ListenerObserver,
): Promise<string | undefined> {
  observer.bodyReadStarted();
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onIdle = (): void => {
      done();
      observer.bodyTimedOut();
      // The rest of the body is never read: the 408 answer closes the connection.
      incoming.pause();
      reject(new BodyTimeoutError(idleMs));
    };
    const timer = idleMs > 0 ? setTimeout(onIdle, idleMs) : undefined;
    const done = (): void => {
      clearTimeout(timer);
      incoming.off('data', onData);
      incoming.off('end', onEnd);
      incoming.off('error', onError);
      incoming.off('close', onClose);
      observer.bodyReadEnded();
    };
    const onData = (chunk: Buffer): void => {
      timer?.refresh();
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
