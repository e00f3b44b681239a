/**
 * Two cheap views of an upstream's latency, both runtime-neutral and constant in memory:
 *
 * - `Ewma`: an exponentially weighted moving average per sample, what load balancing compares
 *   (power-of-two-choices on (in-flight + 1) × EWMA, as Finagle and Linkerd do);
 * - `LatencyWindow`: the recent samples of an engine in a ring, and a quantile of them (the p95
 *   that sets when a read is hedged). The quantile is recomputed every `refreshEvery` samples,
 *   not on every read, so the sort is paid once per batch.
 */
export class Ewma {
  private current: number | undefined;

  /** `alpha` is the weight of each new sample (0.3: the last few samples dominate). */
  constructor(private readonly alpha = 0.3) {}

  record(sample: number): void {
    this.current = this.current === undefined ? sample : this.current + this.alpha * (sample - this.current);
  }

  /** The average so far; undefined before the first sample. */
  get value(): number | undefined {
    return this.current;
  }
}

export class LatencyWindow {
  private readonly samples: number[] = [];
  private next = 0;
  private sinceRefresh = 0;
  private cached: number | undefined;

  constructor(
    private readonly quantileOf = 0.95,
    private readonly size = 256,
    /** No quantile before this many samples: a handful of reads says nothing about a tail. */
    private readonly minSamples = 20,
    private readonly refreshEvery = 16,
  ) {}

  record(sample: number): void {
    if (this.samples.length < this.size) this.samples.push(sample);
    else this.samples[this.next] = sample;
    this.next = (this.next + 1) % this.size;
    this.sinceRefresh += 1;
    if (this.samples.length >= this.minSamples && (this.cached === undefined || this.sinceRefresh >= this.refreshEvery)) {
      this.sinceRefresh = 0;
      const sorted = [...this.samples].sort((a, b) => a - b);
      this.cached = sorted[Math.min(sorted.length - 1, Math.floor(this.quantileOf * sorted.length))];
    }
  }

  /** The quantile of the window (e.g. p95), or undefined while there are too few samples. */
  get quantile(): number | undefined {
    return this.cached;
  }

  get count(): number {
    return this.samples.length;
  }
}
