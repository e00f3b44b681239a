/**
 * Inbound HTTP transport (§5.2) as a Hono app: `POST <base>/<method>` (and `POST <base>` for
 * batches), JSON or SSE answers, status mapping, body cap, CORS. Web-standard: a runtime serves
 * `app.fetch`, and may pass its own request reading (`io`) for speed.
 */
import { Hono, type Env } from 'hono';
import { cors } from 'hono/cors';
import { HttpSessionRegistry, type HttpSessionSettings } from '../session/http-sessions.js';
import type { SessionOptions } from '../session/session.js';
import type { RcpService } from '../service/contract.js';
import { RpcEndpoint } from './endpoint.js';
import { payloadTooLarge, toResponse } from './envelope.js';
import { webRequestIo, type RequestIo } from './request-io.js';

export interface HttpServerOptions<E extends Env = Env> {
  basePath: string;
  maxBodyBytes: number;
  /** Interval of SSE comment heartbeats on long calls. */
  sseHeartbeatMs: number;
  /** Whether SSE may be used at all; it is also used only while `streaming` is advertised (§5.2). */
  streaming: boolean;
  /** Optional stateful HTTP sessions (cancel by id over HTTP); absent = stateless only. */
  httpSessions?: HttpSessionSettings;
  corsOrigins: string[];
  /** Gate evaluated once the body is read, for each request it carries: 429 when the gateway is saturated (never seen by JSON-RPC). */
  admit?: (weight: number) => { ok: true; release: () => void } | { ok: false; retryAfterMs: number };
  /** Most members in one batch (§11); default 100. */
  maxBatchSize?: number;
  session?: Partial<SessionOptions>;
  /** Client authentication and quotas (core/auth/http-guard.ts), installed before any route. */
  guard?: (app: Hono<E>, base: string) => void;
  /** Extra routes (health, metrics) mounted beside the RCP endpoint. */
  extend?: (app: Hono<E>) => void;
  onStreamOpen?: () => void;
  onStreamClose?: () => void;
  /** How requests are read and disconnects noticed; default: web-standard `Request`. */
  io?: RequestIo<E>;
}

const DEFAULT_MAX_BATCH_SIZE = 100;

const CORS_HEADERS = ['content-type', 'accept', 'authorization', 'x-api-key', 'traceparent', 'tracestate', 'rcp-session', 'x-rcpgw-engine'];

/** The app, and what a runtime's direct lane needs to answer RCP requests without it. */
export interface RcpHttpApp<E extends Env> {
  app: Hono<E>;
  endpoint: RpcEndpoint<E>;
  /** The RCP base path, without a trailing slash ('' for the root). */
  base: string;
  /** The body cap the app's limit applies in front of the endpoint (a direct lane applies the same). */
  maxBodyBytes: number;
  /**
   * True when a POST under `base` meets nothing in the app but the body limit and the endpoint: no
   * CORS, no auth guard, no other route there. Only then may a runtime answer such a request
   * with `endpoint.serve` directly (after the same body-limit check) and skip the app.
   */
  endpointOnly: boolean;
}

export function createHttpApp<E extends Env = Env>(service: RcpService, options: HttpServerOptions<E>): Hono<E> {
  return createRcpHttpApp(service, options).app;
}

export function createRcpHttpApp<E extends Env = Env>(service: RcpService, options: HttpServerOptions<E>): RcpHttpApp<E> {
  const app = new Hono<E>();
  const base = options.basePath.replace(/\/+$/, '') || '';
  const io = options.io ?? webRequestIo<E>();
  if (options.corsOrigins.length > 0) {
    app.use(
      `${base}/*`,
      cors({
        origin: options.corsOrigins.includes('*') ? '*' : options.corsOrigins,
        allowMethods: ['POST', 'OPTIONS'],
        allowHeaders: CORS_HEADERS,
        maxAge: 600,
      }),
    );
  }
  options.guard?.(app, base);
  options.extend?.(app);

  const endpoint = new RpcEndpoint<E>(service, {
    base,
    maxBodyBytes: options.maxBodyBytes,
    sseHeartbeatMs: options.sseHeartbeatMs,
    streaming: options.streaming,
    io,
    sessions: options.httpSessions ? new HttpSessionRegistry(options.httpSessions) : undefined,
    maxBatchSize: options.maxBatchSize ?? DEFAULT_MAX_BATCH_SIZE,
    ...(options.admit ? { admit: options.admit } : {}),
    ...(options.session ? { session: options.session } : {}),
    ...(options.onStreamOpen ? { onStreamOpen: options.onStreamOpen } : {}),
    ...(options.onStreamClose ? { onStreamClose: options.onStreamClose } : {}),
  });
  const limit = io.limitBody(options.maxBodyBytes, () => toResponse(payloadTooLarge(options.maxBodyBytes)));
  const before = app.routes.length;
  app.post(`${base}`, limit, endpoint.handle);
  app.post(`${base}/*`, limit, endpoint.handle);
  const others = app.routes.slice(0, before);
  return {
    app,
    endpoint,
    base,
    maxBodyBytes: options.maxBodyBytes,
    endpointOnly: !others.some((route) => mayServePostUnder(route, base)),
  };
}

/**
 * Could this route (or middleware) see a POST to a path under `base`? Conservative: any pattern
 * with a wildcard or parameter might, and so might everything when the base is the root.
 */
function mayServePostUnder(route: { method: string; path: string }, base: string): boolean {
  if (route.method !== 'POST' && route.method !== 'ALL') return false;
  if (base === '' || /[*:]/.test(route.path)) return true;
  return route.path === base || route.path.startsWith(`${base}/`);
}
