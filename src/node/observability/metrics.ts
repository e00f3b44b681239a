/**
 * Prometheus metrics (prom-client) in a registry of their own per gateway, so tests and worker
 * processes never share the global one. Every label is low-cardinality by construction: methods
 * outside the RCP roster collapse to `x-vendor`/`other`, codes outside §12 to `other`, engine ids
 * come from the config. Never a query, never a hit id.
 *
 * The counters and histograms a request can update (its outcome and duration, each engine call,
 * the fan-out width, degraded legs, cancellations) are hot-metrics.ts's: prom-client's exposition,
 * an addition per update. Gauges that mirror engine state (breaker, queue depth, readiness) are
 * read at scrape time, so many engines cost nothing per request. Names and labels are documented in the README (Operations) and kept stable.
 */
import { Counter, Gauge, Registry, collectDefaultMetrics, type Aggregator } from 'prom-client';
import { ErrorCode } from '../../core/protocol/errors.js';
import { isCoreMethod, vendorCapabilityOf } from '../../core/protocol/methods.js';
import type { AbortReason } from '../../core/service/contract.js';
import type { EngineView, MetricsExposition } from '../../core/observability/engine-view.js';
import { ExperimentMetrics } from './experiment-metrics.js';
import { HotCounter, HotHistogram } from './hot-metrics.js';
import { registerReplicaMetrics } from './replica-metrics.js';
import { listenerMetrics } from './listener-metrics.js';

const PREFIX = 'rcpgw_';
const LATENCY_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
const WIDTH_BUCKETS = [0, 1, 2, 3, 4, 6, 8, 12, 16, 32, 64];
const KNOWN_CODES = new Set<number>([0, ...Object.values(ErrorCode)]);
const BREAKER_VALUE: Record<string, number> = { closed: 0, 'half-open': 1, open: 2 };
/** Reasons a leg can be dropped for (UpstreamFailure, abort reasons, engine-error); others → `other`. */
const DEGRADED_REASONS = new Set([
  'remote-error',
  'engine-error',
  'timeout',
  'aborted',
  'transport',
  'crashed',
  'malformed',
  'too-large',
  'circuit-open',
  'queue-full',
  'not-ready',
  'deadline',
  'cancel',
  'disconnect',
  'shutdown',
]);

/** Method label: the RCP roster as is; vendor extensions and anything else collapse. */
export function methodLabel(method: string): string {
  if (isCoreMethod(method)) return method;
  return vendorCapabilityOf(method) ? 'x-vendor' : 'other';
}

export function codeLabel(code: number): string {
  return KNOWN_CODES.has(code) ? String(code) : 'other';
}

export interface MetricsOptions {
  /** Collect prom-client's default process metrics (CPU, memory, event loop, GC). */
  processMetrics?: boolean;
}

export class GatewayMetrics implements MetricsExposition {
  readonly registry = new Registry();
  private enginesView: () => readonly EngineView[] = () => [];
  private inFlight = 0;
  private streamsOpen = 0;

  // The five updated on every request are hot-metrics.ts's (prom-client's exposition, cheap updates).
  private readonly requests = new HotCounter({
    name: `${PREFIX}requests_total`,
    help: 'Requests answered, by method and outcome code (0 = success).',
    labelNames: ['method', 'code'],
    registers: [this.registry],
  });
  private readonly requestSeconds = new HotHistogram({
    name: `${PREFIX}request_duration_seconds`,
    help: 'Time from a request arriving to its answer, by method.',
    labelNames: ['method'],
    buckets: LATENCY_BUCKETS,
    registers: [this.registry],
  });
  private readonly engineCalls = new HotCounter({
    name: `${PREFIX}engine_calls_total`,
    help: 'Upstream calls to an engine, by outcome code (0 = success).',
    labelNames: ['engine', 'code'],
    registers: [this.registry],
  });
  private readonly engineSeconds = new HotHistogram({
    name: `${PREFIX}engine_call_duration_seconds`,
    help: 'Latency of upstream calls to an engine (queueing included).',
    labelNames: ['engine'],
    buckets: LATENCY_BUCKETS,
    registers: [this.registry],
  });
  private readonly fanoutWidth = new HotHistogram({
    name: `${PREFIX}fanout_width`,
    help: 'Engines asked per fanned-out request.',
    labelNames: ['method'],
    buckets: WIDTH_BUCKETS,
    registers: [this.registry],
  });
  private readonly degradedLegs = new HotCounter({
    name: `${PREFIX}degraded_total`,
    help: 'Engines dropped from successful answers (_meta.degraded), by engine and reason.',
    labelNames: ['engine', 'reason'],
    registers: [this.registry],
  });
  private readonly degradedAnswers = new Counter({
    name: `${PREFIX}degraded_answers_total`,
    help: 'Successful answers that carried a non-empty _meta.degraded, by method.',
    labelNames: ['method'],
    registers: [this.registry],
  });
  private readonly breakerTransitions = new Counter({
    name: `${PREFIX}breaker_transitions_total`,
    help: 'Circuit breaker state changes, by engine and target state.',
    labelNames: ['engine', 'from', 'to'],
    registers: [this.registry],
  });
  private readonly sheds = new Counter({
    name: `${PREFIX}engine_sheds_total`,
    help: 'Calls refused because the engine limiter queue was full.',
    labelNames: ['engine'],
    registers: [this.registry],
  });
  private readonly retries = new Counter({
    name: `${PREFIX}retries_total`,
    help: 'Retries of upstream calls sent.',
    labelNames: ['engine'],
    registers: [this.registry],
  });
  private readonly retryDenied = new Counter({
    name: `${PREFIX}retry_budget_exhausted_total`,
    help: 'Retries wanted but refused by the retry budget.',
    labelNames: ['engine'],
    registers: [this.registry],
  });
  private readonly progressFrames = new Counter({
    name: `${PREFIX}progress_frames_total`,
    help: 'notifications/progress frames relayed to clients.',
    registers: [this.registry],
  });
  private readonly cancellations = new HotCounter({
    name: `${PREFIX}cancellations_total`,
    help: 'Requests whose work was aborted, by trigger (cancel, disconnect, deadline, shutdown).',
    labelNames: ['trigger'],
    registers: [this.registry],
  });
  private readonly reloads = new Counter({
    name: `${PREFIX}config_reloads_total`,
    help: 'Config reload attempts, by result (ok, invalid, failed).',
    labelNames: ['result'],
    registers: [this.registry],
  });

  /** Live experiments' metrics (experiment-metrics.ts), in this registry. */
  readonly experiments = new ExperimentMetrics(this.registry);

  /** What the Node listener's connection guards report (listener-metrics.ts). */
  readonly listener = listenerMetrics(this.registry, PREFIX);

  constructor(options: MetricsOptions = {}) {
    if (options.processMetrics !== false) collectDefaultMetrics({ register: this.registry });
    const scalar = (name: string, help: string, read: () => number): void => {
      const gauge: Gauge = new Gauge({ name: `${PREFIX}${name}`, help, registers: [this.registry], collect: () => gauge.set(read()) });
    };
    // Engine state gauges are rebuilt from the live engine list at each scrape, so engines removed
    // by a reload disappear from them. `aggregator` says how `serve --workers N` merges the
    // workers' values into one /metrics (cluster-metrics.ts): load adds up, state does not.
    const perEngine = (name: string, help: string, read: (engine: EngineView) => number, aggregator: Aggregator = 'sum'): void => {
      const gauge: Gauge<'engine'> = new Gauge({
        name: `${PREFIX}${name}`,
        help,
        labelNames: ['engine'],
        registers: [this.registry],
        aggregator,
        collect: () => {
          gauge.reset();
          for (const engine of this.enginesView()) gauge.labels(engine.id).set(read(engine));
        },
      });
    };
    scalar('in_flight_requests', 'Requests being answered right now.', () => this.inFlight);
    scalar('sse_streams_open', 'Open SSE response streams.', () => this.streamsOpen);
    // Across workers: up only when up in every worker; the breaker state of the worst worker.
    perEngine('engine_up', 'Engine initialized and serving (1) or not (0).', (e) => (e.status === 'ready' ? 1 : 0), 'min');
    perEngine(
      'breaker_state',
      'Circuit breaker state: 0 closed, 1 half-open, 2 open.',
      (e) => BREAKER_VALUE[e.breaker.currentState] ?? 2,
      'max',
    );
    perEngine('engine_queue_depth', 'Calls waiting in the engine limiter queue.', (e) => e.queueDepth);
    perEngine('engine_active_calls', 'Calls to the engine in progress (admitted by the limiter).', (e) => e.activeCalls);
    registerReplicaMetrics(this.registry, () => this.enginesView());
  }

  /** Where scrape-time engine gauges read from (the gateway's current engine list). */
  watchEngines(view: () => readonly EngineView[]): void {
    this.enginesView = view;
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  expose(): Promise<string> {
    return this.registry.metrics();
  }

  // ----------------------------------------------------------- requests --
  requestStarted(): void {
    this.inFlight++;
  }

  requestEnded(): void {
    this.inFlight--;
  }

  requestFinished(method: string, code: number, durationMs: number, abortReason: AbortReason | undefined): void {
    const label = methodLabel(method);
    this.requests.labels(label, codeLabel(code)).inc();
    this.requestSeconds.labels(label).observe(durationMs / 1000);
    if (abortReason) this.cancellations.labels(abortReason).inc();
  }

  degradedAnswer(method: string, legs: ReadonlyArray<{ engine: string; reason: string }>): void {
    this.degradedAnswers.labels(methodLabel(method)).inc();
    for (const leg of legs) this.degradedLegs.labels(leg.engine, DEGRADED_REASONS.has(leg.reason) ? leg.reason : 'other').inc();
  }

  progressFrame(): void {
    this.progressFrames.inc();
  }

  streamOpened(): void {
    this.streamsOpen++;
  }

  streamClosed(): void {
    this.streamsOpen = Math.max(0, this.streamsOpen - 1);
  }

  // ------------------------------------------------------------ engines --
  engineCall(engine: string, code: number, durationMs: number): void {
    this.engineCalls.labels(engine, codeLabel(code)).inc();
    this.engineSeconds.labels(engine).observe(durationMs / 1000);
  }

  fanout(method: string, width: number): void {
    this.fanoutWidth.labels(methodLabel(method)).observe(width);
  }

  breakerTransition(engine: string, from: string, to: string): void {
    this.breakerTransitions.labels(engine, from, to).inc();
    this.breakerChanges.set(engine, { state: to, at: Date.now() });
  }

  /** When each engine's breaker last changed state (wall clock), for the operator console. */
  readonly breakerChanges = new Map<string, { state: string; at: number }>();

  shed(engine: string): void {
    this.sheds.labels(engine).inc();
  }

  retry(engine: string): void {
    this.retries.labels(engine).inc();
  }

  retryBudgetExhausted(engine: string): void {
    this.retryDenied.labels(engine).inc();
  }

  reload(result: 'ok' | 'invalid' | 'failed'): void {
    this.reloads.labels(result).inc();
  }
}
