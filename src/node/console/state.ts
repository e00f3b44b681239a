/**
 * The console's picture of the gateway at one moment: a row per engine (live state read from the
 * engine objects, rates from the counters), the federation figures, and chart points. Built from
 * the same in-process sources as `/metrics`; it never carries engine config beyond what the
 * catalog already shows (no URLs, headers, commands or env: those may hold credentials).
 */
import type { GatewaySettings } from '../../core/config/schema.js';
import type { Engine } from '../../core/upstream/engine.js';
import type { ReplicaSetSnapshot } from '../../core/upstream/replicas.js';
import { engineRates, federationRates, type EngineRates, type FederationRates } from './derive.js';
import type { Sample } from './sample.js';

/** Rates are taken over this trailing interval (or what the ring holds, if less). */
export const RATE_WINDOW_MS = 5_000;

export interface EngineRow {
  id: string;
  status: string;
  lastError: string | null;
  transport: string;
  server: string | null;
  weight: number;
  priority: number;
  required: boolean;
  capabilities: string[];
  breaker: {
    state: string;
    openings: number;
    /** Wall clock ms of the last state change seen since the gateway started (null: never changed). */
    changedAt: number | null;
    /** While open: wall clock ms of the next trial. */
    retryAt: number | null;
  };
  activeCalls: number;
  queueDepth: number;
  maxQueue: number;
  rates: EngineRates | null;
  /** Since the gateway started: upstream calls, and those that failed (as `rcpgw_engine_calls_total`). */
  totals: { calls: number; failedCalls: number };
  /**
   * An engine with several endpoints (`urls`): each replica by its index, never its address (as
   * `catalog/list` shows them), and the hedged reads; null for an engine of one endpoint.
   */
  replicas: ReplicaSetSnapshot | null;
}

export interface ChartPoint {
  at: number;
  requestsPerSec: number;
  engines: Record<string, { requestsPerSec: number; errorRate: number; p50: number | null; p95: number | null; p99: number | null }>;
}

export interface ConsoleState {
  at: number;
  gateway: { name: string; fusion: string; rrfK: number; dedup: string; watched: boolean };
  federation: {
    rates: FederationRates | null;
    sseStreamsOpen: number;
    inFlight: number;
    totals: { requests: number; degradedAnswers: number; deadlineHits: number; rateLimited: number; retries: number; retryDenied: number };
  };
  engines: EngineRow[];
}

export interface StateInput {
  engines: readonly Engine[];
  settings: GatewaySettings;
  breakerChanges: ReadonlyMap<string, { state: string; at: number }>;
  sample: Sample;
  baseline: Sample | undefined;
  watched: boolean;
}

function engineRow(engine: Engine, input: StateInput): EngineRow {
  const { sample, baseline } = input;
  const snapshot = engine.breaker.snapshot();
  const change = input.breakerChanges.get(engine.id);
  const now = sample.engines[engine.id];
  const seconds = baseline ? (sample.at - baseline.at) / 1000 : 0;
  return {
    id: engine.id,
    status: engine.status,
    // As catalog/list: addresses and ports only where the endpoint is shown; the log has the full text.
    lastError: engine.lastErrorShown(input.settings.exposeEndpoints) ?? null,
    transport: engine.config.transport,
    server: engine.server ? `${engine.server.name}${engine.server.version ? ` ${engine.server.version}` : ''}` : null,
    weight: engine.weight,
    priority: engine.priority,
    required: engine.required,
    capabilities: Object.keys(engine.capabilities ?? {}).sort(),
    breaker: {
      state: snapshot.state,
      openings: snapshot.openings,
      changedAt: change?.at ?? null,
      retryAt: snapshot.retryInMs !== undefined ? sample.at + snapshot.retryInMs : null,
    },
    activeCalls: engine.activeCalls,
    queueDepth: engine.queueDepth,
    maxQueue: engine.maxQueue,
    rates: now && baseline ? engineRates(now, baseline.engines[engine.id], seconds, sample.bounds) : null,
    totals: { calls: total(now?.calls ?? {}), failedCalls: total(now?.calls ?? {}) - (now?.calls['0'] ?? 0) },
    replicas: engine.replicaSet ?? null,
  };
}

function total(record: Record<string, number>): number {
  return Object.values(record).reduce((a, b) => a + b, 0);
}

export function consoleState(input: StateInput): ConsoleState {
  const { sample, baseline, settings } = input;
  const engines = Object.values(sample.engines);
  return {
    at: sample.at,
    gateway: { name: settings.name, fusion: settings.fusion, rrfK: settings.rrfK, dedup: settings.dedup, watched: input.watched },
    federation: {
      rates: baseline ? federationRates(sample, baseline) : null,
      sseStreamsOpen: sample.sseOpen,
      inFlight: sample.inFlight,
      totals: {
        requests: total(sample.requests),
        degradedAnswers: sample.degradedAnswers,
        deadlineHits: sample.cancellations.deadline ?? 0,
        rateLimited: sample.requests['-32011'] ?? 0,
        retries: engines.reduce((a, e) => a + e.retries, 0),
        retryDenied: engines.reduce((a, e) => a + e.retryDenied, 0),
      },
    },
    engines: input.engines.map((engine) => engineRow(engine, input)),
  };
}

/** One chart point: the rates over the interval that ends at `sample`. */
export function chartPoint(sample: Sample, baseline: Sample | undefined): ChartPoint {
  const seconds = baseline ? (sample.at - baseline.at) / 1000 : 0;
  const engines: ChartPoint['engines'] = {};
  for (const [id, now] of Object.entries(sample.engines)) {
    const r = engineRates(now, baseline?.engines[id], seconds, sample.bounds);
    engines[id] = { requestsPerSec: r.requestsPerSec, errorRate: r.errorRate, p50: r.p50, p95: r.p95, p99: r.p99 };
  }
  return { at: sample.at, requestsPerSec: baseline ? federationRates(sample, baseline).requestsPerSec : 0, engines };
}
