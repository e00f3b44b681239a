/**
 * One reading of the gateway's counters, taken from the same prom-client registry `/metrics`
 * exposes (through its API, never by parsing the text). Counters are cumulative; rates and
 * latency quantiles come from the difference of two samples (derive.ts).
 */
import type { Registry } from 'prom-client';

export interface EngineSample {
  /** Upstream calls by outcome code ('0' = success). */
  calls: Record<string, number>;
  /** Cumulative latency histogram: counts per upper bound in `Sample.bounds` (last is +Inf). */
  buckets: number[];
  /** Legs dropped from answers, by reason (timeout, circuit-open, transport, …). */
  degraded: Record<string, number>;
  sheds: number;
  retries: number;
  retryDenied: number;
}

export interface Sample {
  /** Wall clock, ms. */
  at: number;
  /** Upper bounds of the latency buckets, seconds (Infinity last). */
  bounds: number[];
  /** Requests answered, by outcome code. */
  requests: Record<string, number>;
  degradedAnswers: number;
  /** Aborted requests by trigger (cancel, disconnect, deadline, shutdown). */
  cancellations: Record<string, number>;
  progressFrames: number;
  sseOpen: number;
  inFlight: number;
  engines: Record<string, EngineSample>;
}

interface Value {
  value: number;
  labels: Partial<Record<string, string | number>>;
  metricName?: string;
}

async function valuesOf(registry: Registry, name: string): Promise<Value[]> {
  const metric = registry.getSingleMetric(`rcpgw_${name}`);
  if (!metric) return [];
  return (await metric.get()).values as Value[];
}

function add(into: Record<string, number>, key: string, value: number): void {
  into[key] = (into[key] ?? 0) + value;
}

function engineOf(sample: Sample, id: string): EngineSample {
  return (sample.engines[id] ??= { calls: {}, buckets: sample.bounds.map(() => 0), degraded: {}, sheds: 0, retries: 0, retryDenied: 0 });
}

/** Read every counter the console shows; `engineIds` get a row even before their first call. */
export async function takeSample(registry: Registry, engineIds: readonly string[], at = Date.now()): Promise<Sample> {
  const [requests, latency, calls, degraded, degradedAnswers, cancellations, sheds, retries, denied, frames, sse, inFlight] =
    await Promise.all(
      [
        'requests_total',
        'engine_call_duration_seconds',
        'engine_calls_total',
        'degraded_total',
        'degraded_answers_total',
        'cancellations_total',
        'engine_sheds_total',
        'retries_total',
        'retry_budget_exhausted_total',
        'progress_frames_total',
        'sse_streams_open',
        'in_flight_requests',
      ].map((name) => valuesOf(registry, name)),
    );
  const bucketValues = latency!.filter((v) => v.metricName?.endsWith('_bucket'));
  const bounds = [...new Set(bucketValues.map((v) => Number(v.labels.le === '+Inf' ? Infinity : v.labels.le)))].sort((a, b) => a - b);
  const sample: Sample = {
    at,
    bounds,
    requests: {},
    degradedAnswers: 0,
    cancellations: {},
    progressFrames: 0,
    sseOpen: sse![0]?.value ?? 0,
    inFlight: inFlight![0]?.value ?? 0,
    engines: {},
  };
  for (const id of engineIds) engineOf(sample, id);
  for (const v of requests!) add(sample.requests, String(v.labels.code), v.value);
  for (const v of degradedAnswers!) sample.degradedAnswers += v.value;
  for (const v of cancellations!) add(sample.cancellations, String(v.labels.trigger), v.value);
  for (const v of frames!) sample.progressFrames += v.value;
  for (const v of calls!) add(engineOf(sample, String(v.labels.engine)).calls, String(v.labels.code), v.value);
  for (const v of degraded!) add(engineOf(sample, String(v.labels.engine)).degraded, String(v.labels.reason), v.value);
  for (const v of sheds!) engineOf(sample, String(v.labels.engine)).sheds += v.value;
  for (const v of retries!) engineOf(sample, String(v.labels.engine)).retries += v.value;
  for (const v of denied!) engineOf(sample, String(v.labels.engine)).retryDenied += v.value;
  for (const v of bucketValues) {
    const le = v.labels.le === '+Inf' ? Infinity : Number(v.labels.le);
    engineOf(sample, String(v.labels.engine)).buckets[bounds.indexOf(le)] = v.value;
  }
  return sample;
}
