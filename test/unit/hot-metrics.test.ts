/**
 * The hot metrics (src/node/observability/hot-metrics.ts) must be indistinguishable from
 * prom-client's own Counter and Histogram to anything that reads a registry: the Prometheus and
 * OpenMetrics texts, the JSON values the console reads, and the sums `--workers` merges.
 */
import { AggregatorRegistry, Counter, Histogram, Registry, type RegistryContentType } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { HotCounter, HotHistogram } from '../../src/node/observability/hot-metrics.js';

const BUCKETS = [0.001, 0.01, 0.1, 1];

/** One registry with prom-client's metrics, one with the hot ones, fed the same events. */
function pair(openMetrics = false) {
  const make = (hot: boolean) => {
    const registry = new Registry<RegistryContentType>();
    if (openMetrics) registry.setContentType(Registry.OPENMETRICS_CONTENT_TYPE);
    const config = { registers: [registry] };
    const counter = hot
      ? new HotCounter({ name: 'x_requests_total', help: 'Requests.', labelNames: ['method', 'code'], ...config })
      : new Counter({ name: 'x_requests_total', help: 'Requests.', labelNames: ['method', 'code'], ...config });
    const histogram = hot
      ? new HotHistogram({ name: 'x_seconds', help: 'Latency.', labelNames: ['engine'], buckets: BUCKETS, ...config })
      : new Histogram({ name: 'x_seconds', help: 'Latency.', labelNames: ['engine'], buckets: BUCKETS, ...config });
    return {
      registry,
      inc: (method: string, code: string) => counter.labels(method, code).inc(),
      observe: (engine: string, value: number) => histogram.labels(engine).observe(value),
    };
  };
  return { reference: make(false), hot: make(true) };
}

type Side = ReturnType<typeof pair>['hot'];

function feed(side: Side): void {
  side.inc('retrieve', '0');
  side.inc('retrieve', '0');
  side.inc('retrieve', '-32010');
  side.inc('embed', '0');
  // Below the first bound, exactly on bounds, between bounds, above every bound.
  for (const value of [0.0001, 0.001, 0.005, 0.01, 0.5, 1, 7.25]) side.observe('e0', value);
  side.observe('e1', 0.02);
  side.observe('e0', 0);
}

/** prom-client's JSON carries an `exemplar` key (null or undefined) the hot metrics leave out. */
function withoutExemplars(metrics: Awaited<ReturnType<Registry['getMetricsAsJSON']>>): unknown {
  return metrics.map((metric) => ({
    ...metric,
    values: metric.values.map((value) => {
      const { exemplar: _exemplar, ...rest } = value as typeof value & { exemplar?: unknown };
      return rest;
    }),
  }));
}

describe('hot metrics', () => {
  it('give the same Prometheus text as prom-client for the same events', async () => {
    const { reference, hot } = pair();
    feed(reference);
    feed(hot);
    const text = await hot.registry.metrics();
    expect(text).toBe(await reference.registry.metrics());
    expect(text).toContain('x_seconds_bucket{le="0.001",engine="e0"} 3');
    expect(text).toContain('x_seconds_bucket{le="+Inf",engine="e0"} 8');
    expect(text).toContain('x_requests_total{method="retrieve",code="0"} 2');
  });

  it('give the same OpenMetrics text', async () => {
    const { reference, hot } = pair(true);
    feed(reference);
    feed(hot);
    expect(await hot.registry.metrics()).toBe(await reference.registry.metrics());
  });

  it('give the same JSON values (what the console and --workers read)', async () => {
    const { reference, hot } = pair();
    feed(reference);
    feed(hot);
    expect(withoutExemplars(await hot.registry.getMetricsAsJSON())).toEqual(withoutExemplars(await reference.registry.getMetricsAsJSON()));
  });

  it('merge across workers as prom-client does (counters and histograms summed)', async () => {
    const workers = [pair(), pair()];
    for (const { reference, hot } of workers) {
      feed(reference);
      feed(hot);
    }
    workers[1]!.hot.observe('e2', 3);
    workers[1]!.reference.observe('e2', 3);
    const merged = (side: 'hot' | 'reference') =>
      Promise.all(workers.map((w) => w[side].registry.getMetricsAsJSON())).then((all) => AggregatorRegistry.aggregate(all).metrics());
    const text = await merged('hot');
    expect(text).toBe(await merged('reference'));
    expect(text).toContain('x_requests_total{method="retrieve",code="0"} 4');
  });

  it('start from zero again after a registry reset', async () => {
    const { reference, hot } = pair();
    feed(reference);
    feed(hot);
    reference.registry.resetMetrics();
    hot.registry.resetMetrics();
    hot.inc('retrieve', '0');
    reference.inc('retrieve', '0');
    const text = await hot.registry.metrics();
    expect(text).toBe(await reference.registry.metrics());
    expect(text).not.toContain('embed');
  });

  it('refuse a value that is not a finite number, and a wrong number of labels', () => {
    const registry = new Registry();
    const histogram = new HotHistogram({ name: 'y_seconds', help: 'h', labelNames: ['engine'], buckets: BUCKETS, registers: [registry] });
    expect(() => histogram.labels('e0').observe(Number.NaN)).toThrow(TypeError);
    expect(() => histogram.labels('e0', 'extra')).toThrow(/label values/);
    expect(() => new HotCounter({ name: 'z_total', help: 'h', labelNames: [], registers: [registry] })).toThrow(/at least one label/);
  });
});
