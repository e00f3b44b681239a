/**
 * What a config reload does to the engine set, decided by comparing each engine's *connection
 * settings* (transport, address/command/adapter, headers, env, timeouts, limiter and breaker settings —
 * with the gateway defaults they inherit resolved). Same id + same connection settings → the
 * engine object is kept (connections, breaker state, status survive); anything else is a new
 * engine, and the old object (if any) is retired. Pure: no engine is touched here.
 */
import { BreakerSettingsSchema, type EngineConfig, type GatewayConfig, type GatewaySettings } from '../config/schema.js';

const BREAKER_DEFAULTS = BreakerSettingsSchema.parse({});

/** The part of an engine (real or test double) the planner reads. */
export interface PlannedEngine {
  readonly id: string;
  readonly config: EngineConfig;
}

export interface ReloadSummary {
  added: string[];
  removed: string[];
  /** Same id, different connection settings: replaced by a fresh engine. */
  replaced: string[];
  /** Same id and connection settings, different weight/priority/required/expose/writer. */
  retuned: string[];
  unchanged: string[];
}

export interface ReloadPlan<E extends PlannedEngine> {
  /** The new engine list in config order: an engine kept as it is, or a config to build. */
  slots: Array<{ keep: E; config: EngineConfig } | { create: EngineConfig }>;
  /** Engines leaving the set (removed or replaced); stop them once in-flight requests finish. */
  retire: E[];
  summary: ReloadSummary;
}

/** The connection-relevant settings of one engine, with inherited gateway defaults resolved. */
function connectionSettings(engine: EngineConfig, settings: GatewaySettings): unknown {
  return canonical({
    transport: engine.transport,
    url: engine.url,
    urls: engine.urls,
    hedge: engine.hedge,
    command: engine.command,
    // An in-process adapter's database, table and columns: any change opens it anew.
    adapter: engine.adapter,
    cwd: engine.cwd,
    env: engine.env,
    headers: engine.headers,
    timeoutMs: engine.timeoutMs ?? settings.engineTimeoutMs,
    maxConcurrent: engine.maxConcurrent ?? settings.maxConcurrentPerEngine,
    maxQueue: engine.maxQueue ?? settings.maxQueuePerEngine,
    maxResponseBytes: engine.maxResponseBytes ?? settings.maxResponseBytes,
    breaker: { ...BREAKER_DEFAULTS, ...stripUndefined(settings.breaker), ...stripUndefined(engine.breaker ?? {}) },
  });
}

/** Routing policy: may change without touching connections. */
function policy(engine: EngineConfig): unknown {
  return canonical({
    weight: engine.weight,
    required: engine.required,
    priority: engine.priority,
    expose: engine.expose,
    writer: engine.writer,
  });
}

export function planReload<E extends PlannedEngine>(
  current: readonly E[],
  currentSettings: GatewaySettings,
  next: GatewayConfig,
): ReloadPlan<E> {
  const byId = new Map(current.map((engine) => [engine.id, engine]));
  const summary: ReloadSummary = { added: [], removed: [], replaced: [], retuned: [], unchanged: [] };
  const slots: ReloadPlan<E>['slots'] = [];
  const retire: E[] = [];
  const nextIds = new Set<string>();
  for (const config of next.engines) {
    nextIds.add(config.id);
    const existing = byId.get(config.id);
    if (!existing) {
      summary.added.push(config.id);
      slots.push({ create: config });
      continue;
    }
    const sameConnection =
      JSON.stringify(connectionSettings(existing.config, currentSettings)) === JSON.stringify(connectionSettings(config, next.gateway));
    if (!sameConnection) {
      summary.replaced.push(config.id);
      slots.push({ create: config });
      retire.push(existing);
      continue;
    }
    if (JSON.stringify(policy(existing.config)) === JSON.stringify(policy(config))) summary.unchanged.push(config.id);
    else summary.retuned.push(config.id);
    slots.push({ keep: existing, config });
  }
  for (const engine of current) {
    if (!nextIds.has(engine.id)) {
      summary.removed.push(engine.id);
      retire.push(engine);
    }
  }
  return { slots, retire, summary };
}

/** Settings that the running listener fixed at startup: a reload cannot change them. */
const RESTART_ONLY_SETTINGS = [
  'host',
  'port',
  'basePath',
  'maxBodyBytes',
  'maxInFlight',
  'maxBatchSize',
  'headersTimeoutMs',
  'bodyTimeoutMs',
  'maxConnectionsPerIp',
  'maxBufferedUpstreamBytes',
  'sseHeartbeatMs',
  'corsOrigins',
  'metrics',
  'httpSessions',
  'httpSessionTtlMs',
  'maxHttpSessions',
  'cursorSecret',
  // Advertised or not in every session's capability set, which is fixed (§13.2): flipping it live
  // would refuse the cursors of sessions told `pagination`, or page sessions told none.
  'pagination',
  'watchConfig',
  'drainTimeoutMs',
  // Client authentication, tenants and quotas are assembled once at start (core/auth/runtime.ts).
  'auth',
  'tenants',
  'quotas',
] as const;

/**
 * The new settings with every restart-only value carried over from `before`, and the names of
 * those that the new config tried to change (the reload logs them as ignored).
 */
export function carryRestartOnly(before: GatewaySettings, after: GatewaySettings): { settings: GatewaySettings; ignored: string[] } {
  const a = before as Record<string, unknown>;
  const merged: Record<string, unknown> = { ...after };
  const ignored: string[] = [];
  for (const key of RESTART_ONLY_SETTINGS) {
    if (JSON.stringify(canonical(a[key])) !== JSON.stringify(canonical(merged[key]))) ignored.push(key);
    if (key in a) merged[key] = a[key];
    else delete merged[key];
  }
  return { settings: merged as GatewaySettings, ignored };
}

/** Deep copy with object keys sorted and undefined members dropped, so JSON text compares by value. */
function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(value).sort()) {
      const item = (value as Record<string, unknown>)[key];
      if (item !== undefined) out[key] = canonical(item);
    }
    return out;
  }
  return value;
}

function stripUndefined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}
