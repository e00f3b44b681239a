/**
 * The console's memory of the last minutes: a ring of per-second samples, taken only while at
 * least one console stream is open (the timer starts with the first watcher and stops with the
 * last), plus a sample taken on demand when the snapshot endpoint is asked. A gateway nobody
 * watches runs no timer and does no work for the console; the charts start when someone looks,
 * which is the price of that.
 */
import type { Registry } from 'prom-client';
import { takeSample, type Sample } from './sample.js';

/** Five minutes at one sample a second. */
export const RING_SIZE = 300;

export type SampleListener = (sample: Sample) => void;

export class Sampler {
  private readonly ring: Sample[] = [];
  private readonly listeners = new Set<SampleListener>();
  private timer: ReturnType<typeof setInterval> | undefined;
  private taking: Promise<Sample> | undefined;

  constructor(
    private readonly registry: Registry,
    private readonly engineIds: () => readonly string[],
    private readonly intervalMs = 1_000,
  ) {}

  /** Samples held, oldest first. */
  get samples(): readonly Sample[] {
    return this.ring;
  }

  get watching(): boolean {
    return this.timer !== undefined;
  }

  /** A fresh sample, kept in the ring (concurrent callers share one reading). */
  sampleNow(): Promise<Sample> {
    this.taking ??= takeSample(this.registry, this.engineIds()).then(
      (sample) => {
        this.taking = undefined;
        this.ring.push(sample);
        if (this.ring.length > RING_SIZE) this.ring.shift();
        return sample;
      },
      (err: unknown) => {
        this.taking = undefined;
        throw err;
      },
    );
    return this.taking;
  }

  /** The newest sample taken at or before `at - ageMs` (the baseline for a rate over ~ageMs). */
  before(sample: Sample, ageMs: number): Sample | undefined {
    for (let i = this.ring.length - 1; i >= 0; i--) {
      const older = this.ring[i]!;
      if (older !== sample && older.at <= sample.at - ageMs) return older;
    }
    return undefined;
  }

  /** Call `listener` with each new sample until the returned function is called. */
  watch(listener: SampleListener): () => void {
    this.listeners.add(listener);
    if (!this.timer) {
      this.timer = setInterval(() => void this.tick(), this.intervalMs);
      this.timer.unref?.();
    }
    return () => {
      this.listeners.delete(listener);
      if (this.listeners.size === 0 && this.timer) {
        clearInterval(this.timer);
        this.timer = undefined;
      }
    };
  }

  private async tick(): Promise<void> {
    const sample = await this.sampleNow().catch(() => undefined);
    if (!sample) return;
    for (const listener of this.listeners) listener(sample);
  }
}
