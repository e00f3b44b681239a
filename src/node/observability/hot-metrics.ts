/**
 * A counter and a histogram for the metrics every request updates, exposed exactly as
 * prom-client's own are (same text, OpenMetrics and JSON values, same `sum` aggregation across
 * `--workers`), but cheap to update: a label child is a plain record whose update is an addition
 * or two. prom-client's children re-validate, re-hash and re-sort their labels and allocate on
 * every update; five such updates per request cost about a tenth of the gateway's CPU under load
 * (docs/performance.md, "Metrics on the hot path"). The registry reads these through the same
 * `get()` / `getForPromString()` every prom-client metric has: only the public exposition shape is
 * relied on, never prom-client's internals.
 *
 * Label values are the caller's business: the hot metrics are fed only bounded, pre-mapped
 * values (metrics.ts: method and code labels, configured engine ids).
 */
import type { Aggregator, Metric, MetricValue, MetricValueWithName, Registry, RegistryContentType } from 'prom-client';

type Labels = Record<string, string | number>;

interface Exposition<V> {
  name: string;
  help: string;
  type: 'counter' | 'histogram';
  values: V[];
  aggregator: Aggregator;
}

interface HotMetricConfig {
  name: string;
  help: string;
  labelNames: readonly string[];
  registers: ReadonlyArray<Registry<RegistryContentType>>;
}

/**
 * A registry takes any object with prom-client's exposition methods (`name`, `get()`, `reset()`,
 * optionally `getForPromString()`); its type names only prom-client's own classes.
 */
function register(metric: HotCounter | HotHistogram, registries: ReadonlyArray<Registry<RegistryContentType>>): void {
  for (const registry of registries) registry.registerMetric(metric as unknown as Metric);
}

/**
 * Children found by their label values through one Map per label (no key string built per
 * update), and listed in the order they were first used (prom-client's order).
 */
class Children<C extends { labels: Labels }> {
  private readonly root = new Map<string, unknown>();
  private readonly ordered: C[] = [];

  constructor(
    private readonly labelNames: readonly string[],
    private readonly make: (labels: Labels) => C,
  ) {
    // An unlabelled prom-client metric shows a zero before its first update; these are for labelled ones.
    if (labelNames.length === 0) throw new Error('a hot metric needs at least one label');
  }

  get(values: readonly string[]): C {
    if (values.length !== this.labelNames.length) {
      throw new Error(`expected ${this.labelNames.length} label values, got ${values.length}`);
    }
    let level = this.root;
    const last = values.length - 1;
    for (let i = 0; i < last; i++) {
      let next = level.get(values[i]!) as Map<string, unknown> | undefined;
      if (next === undefined) level.set(values[i]!, (next = new Map()));
      level = next;
    }
    let child = level.get(values[last]!) as C | undefined;
    if (child === undefined) {
      const labels: Labels = {};
      for (let i = 0; i < values.length; i++) labels[this.labelNames[i]!] = values[i]!;
      child = this.make(labels);
      level.set(values[last]!, child);
      this.ordered.push(child);
    }
    return child;
  }

  all(): readonly C[] {
    return this.ordered;
  }

  clear(): void {
    this.root.clear();
    this.ordered.length = 0;
  }
}

interface CounterChild {
  labels: Labels;
  value: number;
  inc(by?: number): void;
}

export class HotCounter {
  readonly type = 'counter' as const;
  readonly aggregator: Aggregator = 'sum';
  readonly name: string;
  readonly help: string;
  private readonly children: Children<CounterChild>;

  constructor(config: HotMetricConfig) {
    this.name = config.name;
    this.help = config.help;
    this.children = new Children(config.labelNames, (labels) => ({
      labels,
      value: 0,
      inc(by = 1) {
        this.value += by;
      },
    }));
    register(this, config.registers);
  }

  /** The child for these label values (created on first use); keep it or ask again, both are cheap. */
  labels(...values: string[]): { inc(by?: number): void } {
    return this.children.get(values);
  }

  get(): Promise<Exposition<MetricValue<string>>> {
    const values: MetricValue<string>[] = [];
    for (const child of this.children.all()) values.push({ value: child.value, labels: child.labels });
    return Promise.resolve({ help: this.help, name: this.name, type: this.type, values, aggregator: this.aggregator });
  }

  reset(): void {
    this.children.clear();
  }
}

interface HistogramChild {
  labels: Labels;
  /** Observations per bucket (not cumulative); the last slot counts those above every bound. */
  counts: number[];
  sum: number;
  count: number;
  observe(value: number): void;
}

export class HotHistogram {
  readonly type = 'histogram' as const;
  readonly aggregator: Aggregator = 'sum';
  readonly name: string;
  readonly help: string;
  private readonly upperBounds: readonly number[];
  private readonly children: Children<HistogramChild>;

  constructor(config: HotMetricConfig & { buckets: readonly number[] }) {
    this.name = config.name;
    this.help = config.help;
    this.upperBounds = [...config.buckets].sort((a, b) => a - b);
    const bounds = this.upperBounds;
    this.children = new Children(config.labelNames, (labels) => ({
      labels,
      counts: new Array<number>(bounds.length + 1).fill(0),
      sum: 0,
      count: 0,
      observe(value: number) {
        // Same refusals as prom-client's observe: a metric must never take in a non-number.
        if (!Number.isFinite(value)) throw new TypeError(`Value is not a valid number: ${value}`);
        let slot = 0;
        while (slot < bounds.length && value > bounds[slot]!) slot++;
        this.counts[slot]! += 1;
        this.sum += value;
        this.count += 1;
      },
    }));
    register(this, config.registers);
  }

  /** The child for these label values (created on first use). */
  labels(...values: string[]): { observe(value: number): void } {
    return this.children.get(values);
  }

  /** The text exposition's shape: each bucket's own `le` label, the child's labels shared. */
  getForPromString(): Promise<Exposition<MetricValueWithName<string> & { sharedLabels: Labels }>> {
    const values: Array<MetricValueWithName<string> & { sharedLabels: Labels }> = [];
    this.forEachValue((labels, shared, value, metricName) => values.push({ labels, sharedLabels: shared, value, metricName }));
    return Promise.resolve({ name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator });
  }

  /** The JSON shape (`getMetricsAsJSON`, cluster merging): `le` and the child's labels in one object. */
  get(): Promise<Exposition<MetricValueWithName<string>>> {
    const values: MetricValueWithName<string>[] = [];
    this.forEachValue((labels, shared, value, metricName) => values.push({ value, metricName, labels: { ...labels, ...shared } }));
    return Promise.resolve({ name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator });
  }

  reset(): void {
    this.children.clear();
  }

  private forEachValue(emit: (labels: Labels, shared: Labels, value: number, metricName: string) => void): void {
    const bucket = `${this.name}_bucket`;
    for (const child of this.children.all()) {
      let cumulative = 0;
      for (let i = 0; i < this.upperBounds.length; i++) {
        cumulative += child.counts[i]!;
        emit({ le: this.upperBounds[i]! }, child.labels, cumulative, bucket);
      }
      emit({ le: '+Inf' }, child.labels, child.count, bucket);
      emit({}, child.labels, child.sum, `${this.name}_sum`);
      emit({}, child.labels, child.count, `${this.name}_count`);
    }
  }
}
