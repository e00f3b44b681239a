/**
 * The gateway config: a plain §16.1 registry (`{"engines": [...]}`) accepted as-is, plus an
 * optional `gateway` section and optional per-engine settings. Validated with zod; every
 * problem is reported as `path: message` (e.g. `engines[1].url: expected an http(s) URL`).
 * One engine entry's schema is in engine-schema.ts.
 */
import { z } from 'zod';
import { ExperimentsSchema, armEngineProblems } from '../experiments/arms.js';
import { AuthSchema, QuotasSchema, TenantsSchema, authProblems } from '../auth/config.js';
import { EngineSchema, PartialBreakerSchema } from './engine-schema.js';
import { durationMs, nonNegativeDurationMs, nonNegativeInt, positiveInt } from './primitives.js';

export { BreakerSettingsSchema, type BreakerSettings, type EngineConfig } from './engine-schema.js';

const RouteEnginesSchema = z.union([z.string().min(1), z.array(z.string().min(1)).min(1)]);

/**
 * A route (per method): an engine id or an ordered list of ids, or an object that may also pick
 * the fusion strategy, dedup policy and rrfK for that method (retrieve, graph local/drift).
 */
const RouteSchema = z.union([
  RouteEnginesSchema,
  z.strictObject({
    engines: RouteEnginesSchema.optional(),
    fusion: z.enum(['rrf', 'weighted', 'convex']).optional(),
    dedup: z.enum(['id', 'citation.uri', 'content-hash']).optional(),
    rrfK: z.number().finite().min(0).optional(),
  }),
]);
export type RouteConfig = z.infer<typeof RouteSchema>;

/** The engine ids a route names, in order; undefined when it names none (options only). */
export function routeEngineIds(route: RouteConfig | undefined): string[] | undefined {
  if (route === undefined) return undefined;
  if (typeof route === 'string') return [route];
  if (Array.isArray(route)) return route;
  if (route.engines === undefined) return undefined;
  return typeof route.engines === 'string' ? [route.engines] : route.engines;
}

export const GatewaySchema = z.strictObject({
  name: z.string().min(1).default('rcp-gateway'),
  host: z.string().min(1).default('127.0.0.1'),
  port: z.int().min(0).max(65_535).default(8787),
  basePath: z
    .string()
    .regex(/^\/[A-Za-z0-9._/-]*$/, 'expected a path starting with "/"')
    .default('/rcp'),
  /** Default overall deadline per request; a client's `_meta.deadlineMs` can only shorten it. */
  deadlineMs: durationMs.default(10_000),
  /** Default per-engine timeout for one upstream call. */
  engineTimeoutMs: durationMs.default(8_000),
  /** Time reserved for fusion and the answer when forwarding `_meta.deadlineMs` (§16.2). */
  deadlineReserveMs: nonNegativeDurationMs.default(50),
  rrfK: z.number().finite().min(0).default(60),
  maxK: positiveInt.default(100),
  /**
   * Each engine is asked for `fusionDepth` hits whatever `k` is (k ≤ fusionDepth), so the fused
   * order does not depend on k (docs/federation.md: 20 measured best for RRF on Cranfield).
   */
  fusionDepth: positiveInt.max(1000).default(20),
  /** Past `fusionDepth` (k > fusionDepth), each engine is asked for `k × fusionHeadroom` hits (clamped to its maxK). */
  fusionHeadroom: z.number().min(1).max(10).default(2),
  fusion: z.enum(['rrf', 'weighted', 'convex']).default('rrf'),
  dedup: z.enum(['id', 'citation.uri', 'content-hash']).default('id'),
  federationDepth: nonNegativeInt.default(3),
  maxBodyBytes: positiveInt.default(1_048_576),
  maxResponseBytes: positiveInt.default(16_777_216),
  /** Gateway-wide cap on engine answer bytes buffered at once; a leg that would pass it fails `too-large`. */
  maxBufferedUpstreamBytes: positiveInt.default(268_435_456),
  maxInFlight: positiveInt.default(1_024),
  /** Members of one JSON-RPC batch (§11); each counts against maxInFlight. Larger batches: 413 / -32013. */
  maxBatchSize: positiveInt.default(100),
  /** HTTP: time to receive a request's headers. */
  headersTimeoutMs: durationMs.default(10_000),
  /** HTTP: longest silence between two reads of a request body (as nginx's client_body_timeout); then 408. */
  bodyTimeoutMs: durationMs.default(10_000),
  /** HTTP: open connections per client address; more are closed at once. */
  maxConnectionsPerIp: positiveInt.default(256),
  /**
   * Node: plain JSON RCP posts skip the web framework when nothing but the RCP endpoint would see
   * them (no CORS, no auth); same answers, less CPU per request (docs/performance.md). Off: every
   * request goes through the app.
   */
  directLane: z.boolean().default(true),
  maxConcurrentPerEngine: positiveInt.default(64),
  maxQueuePerEngine: nonNegativeInt.default(256),
  sseHeartbeatMs: durationMs.default(15_000),
  progressFramesPerSecond: positiveInt.default(20),
  /**
   * Optional stateful HTTP sessions (§5.2): `initialize` over HTTP returns `_meta.session`, and a
   * client sending it back as `RCP-Session` may POST `notifications/cancel` for its own request ids.
   * Replica-local: behind a load balancer the cancel must reach the same replica (sticky routing).
   */
  httpSessions: z.boolean().default(false),
  /** An HTTP session unused for this long is forgotten. */
  httpSessionTtlMs: durationMs.default(900_000),
  /** At most this many live HTTP sessions; the least recently used is forgotten first. */
  maxHttpSessions: positiveInt.default(10_000),
  corsOrigins: z.array(z.string()).default([]),
  exposeEndpoints: z.boolean().default(false),
  breaker: PartialBreakerSchema.default({}),
  retry: z
    .strictObject({
      /** Retries allowed as a fraction of recent requests. */
      budgetRatio: z.number().min(0).max(1).default(0.1),
      /** Retries always allowed per window, so a quiet gateway can still retry. */
      minPerWindow: nonNegativeInt.default(10),
      windowMs: durationMs.default(10_000),
      /** Base delay before a retry when the engine gave no retryAfterMs (jittered ×0.5–1.5). */
      backoffMs: nonNegativeDurationMs.default(50),
    })
    .default({ budgetRatio: 0.1, minPerWindow: 10, windowMs: 10_000, backoffMs: 50 }),
  /** method → engine id or ordered list of engine ids (routing of non-fusable methods). */
  routes: z.record(z.string(), RouteSchema).default({}),
  /** Write every index/add and index/delete to every writable engine. */
  broadcastWrites: z.boolean().default(false),
  /**
   * Whether the gateway offers pagination (§10): the `pagination` capability, a signed
   * `nextCursor` on results with more hits, and `cursor` accepted. Off, no cursor is made (each
   * costs a fingerprint, an HMAC and their encoding per answer: docs/performance.md) and a
   * `cursor` param is -32602; for clients that only ever take the top k.
   */
  pagination: z.boolean().default(true),
  /** Secret for signing pagination cursors; a random per-process key when absent (set it when running replicas). */
  cursorSecret: z.string().min(16).optional(),
  cursorTtlMs: positiveInt.default(3_600_000),
  /** Deepest per-engine rank federated pagination reads (§10); past it the result set ends. */
  pageMaxDepth: positiveInt.default(1_000),
  /**
   * Lame-duck time at shutdown: after SIGTERM the gateway answers /readyz 503 and keeps serving
   * for this long, so load balancers take it out of rotation before the listener stops accepting;
   * then the drain (drainTimeoutMs) starts. 0 = stop accepting at once (Kubernetes: use a preStop
   * sleep instead, the endpoint removal does not depend on /readyz).
   */
  drainDelayMs: nonNegativeDurationMs.default(0),
  drainTimeoutMs: durationMs.default(10_000),
  /** Supervision: first delay before restarting / re-initializing an engine that is down; ×2 per failed attempt (±20 % jitter). */
  restartDelayMs: durationMs.default(200),
  /** Cap on that delay. */
  restartMaxDelayMs: durationMs.default(30_000),
  logLevel: z.enum(['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent']).default('info'),
  /** Put query text into request log lines (off: queries can carry personal data). */
  logQueries: z.boolean().default(false),
  /** Re-read the config file when it changes (SIGHUP always does). */
  watchConfig: z.boolean().default(false),
  metrics: z.strictObject({ enabled: z.boolean().default(true), port: z.int().min(0).max(65_535).optional() }).default({ enabled: true }),
  /**
   * The operator console at `/console` (src/node/console/): engines, breakers, latency, the search
   * explorer. Off by default; when on it answers loopback clients only.
   */
  console: z.strictObject({ enabled: z.boolean().default(false) }).default({ enabled: false }),
  /** Arms and A/B experiments (core/experiments/arms.ts); none by default. */
  experiments: ExperimentsSchema.optional(),
  /** Client authentication (API keys, JWT), ops-path rules, audit (core/auth/config.ts); off by default. */
  auth: AuthSchema.prefault({}),
  /** Tenant name → engines, scope ceiling, maxK, deadline ceiling, quota. */
  tenants: TenantsSchema.default({}),
  /** Per-principal and per-IP rate limits and concurrency caps; the store (memory or Redis). */
  quotas: QuotasSchema.prefault({}),
});
export type GatewaySettings = z.infer<typeof GatewaySchema>;

export const ConfigSchema = z
  .looseObject({
    $schema: z.string().optional(),
    engines: z.array(EngineSchema).min(1, 'expected at least one engine'),
    gateway: GatewaySchema.default(GatewaySchema.parse({})),
  })
  .superRefine((config, ctx) => {
    const seen = new Map<string, number>();
    config.engines.forEach((engine, index) => {
      const first = seen.get(engine.id);
      if (first !== undefined) {
        ctx.addIssue({
          code: 'custom',
          path: ['engines', index, 'id'],
          message: `duplicate engine id "${engine.id}" (also engines[${first}])`,
        });
      }
      seen.set(engine.id, index);
    });
    for (const [method, target] of Object.entries(config.gateway.routes)) {
      for (const id of routeEngineIds(target) ?? []) {
        if (!seen.has(id)) ctx.addIssue({ code: 'custom', path: ['gateway', 'routes', method], message: `unknown engine id "${id}"` });
      }
    }
    const { auth, tenants, quotas } = config.gateway;
    for (const problem of authProblems(auth, tenants, quotas, new Set(seen.keys()))) {
      ctx.addIssue({ code: 'custom', path: ['gateway', ...problem.path], message: problem.message });
    }
    const experiments = config.gateway.experiments;
    for (const problem of experiments ? armEngineProblems(experiments, seen) : []) {
      ctx.addIssue({ code: 'custom', path: ['gateway', 'experiments', ...problem.path], message: problem.message });
    }
  });
export type GatewayConfig = z.infer<typeof ConfigSchema>;
