/**
 * One engine entry of the config (§16.1 registry fields plus the gateway's per-engine settings):
 * its transport (http with one URL or replicas, stdio, an in-process adapter), weight, limits,
 * breaker overrides, hedging and id space. schema.ts puts the entries in the whole config.
 */
import { z } from 'zod';
import { durationMs, fusionWeight, httpUrl, nonNegativeInt, positiveInt } from './primitives.js';

export const BreakerSettingsSchema = z.strictObject({
  /** Failure percentage in the rolling window that opens the breaker. */
  errorThresholdPercentage: z.number().min(1).max(100).default(50),
  rollingWindowMs: durationMs.default(10_000),
  rollingBuckets: positiveInt.default(10),
  /** Minimum calls in the window before the breaker may open (opossum's default of 0 opens on one failure). */
  volumeThreshold: positiveInt.default(5),
  resetTimeoutMs: durationMs.default(5_000),
  /** Reset timeout grows ×2 per consecutive opening, capped here. */
  maxResetTimeoutMs: durationMs.default(60_000),
});
export type BreakerSettings = z.infer<typeof BreakerSettingsSchema>;

/**
 * Breaker overrides with no defaults of their own: an engine that sets one key inherits the rest
 * from the gateway section (`.partial()` would keep the field defaults and silently replace them).
 */
export const PartialBreakerSchema = z.strictObject({
  errorThresholdPercentage: z.number().min(1).max(100).optional(),
  rollingWindowMs: durationMs.optional(),
  rollingBuckets: positiveInt.optional(),
  volumeThreshold: positiveInt.optional(),
  resetTimeoutMs: durationMs.optional(),
  maxResetTimeoutMs: durationMs.optional(),
});

/** An engine id: what configs may name, and all a compact cursor (federation/fused-cursor.ts) accepts as one. */
export const ENGINE_ID = /^[A-Za-z0-9._:-]+$/;

export const EngineSchema = z
  .looseObject({
    id: z.string().min(1, 'expected a non-empty engine id').regex(ENGINE_ID, 'expected letters, digits, ".", "_", ":" or "-"'),
    transport: z.enum(['http', 'stdio', 'adapter'], 'expected "http", "stdio" or "adapter"'),
    url: httpUrl.optional(),
    /**
     * Replicas serving the same index (transport "http"), instead of `url`: one engine for
     * fusion, identity, dedup, breaker and catalog; reads balanced over them (upstream/replicas.ts).
     */
    urls: z.array(httpUrl).min(2, 'expected two or more replica URLs (use url for one)').optional(),
    /** Hedge slow reads to a second replica (needs `urls`); absent = no hedging. */
    hedge: z
      .strictObject({
        /** Hedge after this many ms; absent = the engine's observed p95. */
        delayMs: durationMs.optional(),
        /** Extra requests allowed, as a share of reads (token bucket). */
        budget: z.number().min(0).max(1).default(0.05),
      })
      .optional(),
    /**
     * A database adapter served in this process (transport "adapter"): `kind` plus its settings.
     * The runtime validates the rest (node/config/load.ts), so the core stays free of drivers.
     */
    adapter: z.looseObject({ kind: z.string().min(1) }).optional(),
    command: z.array(z.string()).min(1, 'expected a non-empty command array').optional(),
    weight: fusionWeight.default(1),
    required: z.boolean().default(false),
    priority: z.number().finite().default(0),
    // Per-engine settings (all optional; gateway defaults apply).
    timeoutMs: durationMs.optional(),
    maxConcurrent: positiveInt.optional(),
    maxQueue: nonNegativeInt.optional(),
    maxResponseBytes: positiveInt.optional(),
    headers: z.record(z.string(), z.string()).optional(),
    env: z.record(z.string(), z.string()).optional(),
    cwd: z.string().optional(),
    breaker: PartialBreakerSchema.optional(),
    /** Expose this engine's endpoint in catalog/list (§7.13); hidden by default. */
    expose: z.boolean().optional(),
    /** Engine is the target for writes (index/add, index/delete). */
    writer: z.boolean().optional(),
    /**
     * The id space this engine's hit ids live in (§16.3): hits of engines in different spaces
     * never merge, whatever their ids; engines without one share the default space.
     */
    idSpace: z.string().min(1).max(64).optional(),
    /** A label for the corpus the engine searches (documentation; check-config compares it with idSpace). */
    corpus: z.string().min(1).optional(),
  })
  .superRefine((engine, ctx) => {
    if (engine.transport === 'http' && !engine.url && !engine.urls) {
      ctx.addIssue({ code: 'custom', path: ['url'], message: 'expected an http(s) URL (required for transport "http")' });
    }
    replicaProblems(engine, ctx);
    if (engine.transport === 'stdio' && !engine.command) {
      ctx.addIssue({ code: 'custom', path: ['command'], message: 'expected a command array (required for transport "stdio")' });
    }
    if (engine.transport === 'adapter' && !engine.adapter) {
      ctx.addIssue({
        code: 'custom',
        path: ['adapter'],
        message: 'expected an adapter object with a kind (required for transport "adapter")',
      });
    }
  });
export type EngineConfig = z.infer<typeof EngineSchema>;

/** `urls` and `hedge`: HTTP replicas only, and `url` or `urls`, not both. */
function replicaProblems(engine: { transport: string; url?: string; urls?: string[]; hedge?: object }, ctx: z.RefinementCtx): void {
  if (engine.urls && engine.transport !== 'http') {
    ctx.addIssue({ code: 'custom', path: ['urls'], message: 'replica URLs are for transport "http" only' });
  }
  if (engine.urls && engine.url) {
    ctx.addIssue({ code: 'custom', path: ['urls'], message: 'expected url or urls, not both' });
  }
  if (engine.hedge && !engine.urls) {
    ctx.addIssue({ code: 'custom', path: ['hedge'], message: 'hedging needs replicas: list them in urls' });
  }
  // Two spellings of one server are one replica: its hedges and failovers would go back to it.
  const seen = new Map<string, number>();
  engine.urls?.forEach((url, index) => {
    const server = sameServerKey(url);
    const first = seen.get(server);
    if (first === undefined) seen.set(server, index);
    else
      ctx.addIssue({ code: 'custom', path: ['urls', index], message: `the same server as urls[${first}]: each replica must be its own` });
  });
}

/** A URL as the server it reaches: host case, default port, a host's trailing dot and a path's trailing slash aside. */
function sameServerKey(value: string): string {
  try {
    const url = new URL(value);
    return `${url.protocol}//${url.hostname.replace(/\.$/, '')}:${url.port}${url.pathname.replace(/\/+$/, '')}${url.search}`;
  } catch {
    return value; // not a URL: httpUrl reports it
  }
}
