/**
 * Request generations for hot reload: every request enters the generation current when it
 * starts and leaves it when it is answered. A reload advances the generation; the promise it
 * returns resolves once every request of every earlier generation has finished, which is when
 * engines that left the set may be stopped without cutting off a request that still uses them.
 * Per request this is one counter increment and one decrement.
 */
class Generation {
  active = 0;
  private resolveIdle!: () => void;
  readonly idle = new Promise<void>((resolve) => {
    this.resolveIdle = resolve;
  });

  markIdle(): void {
    this.resolveIdle();
  }
}

export type GenerationLease = Generation;

export class Generations {
  private current = new Generation();
  /** Superseded generations with requests still running. */
  private readonly draining = new Set<Generation>();

  /** A request starts: it belongs to the current generation. */
  enter(): GenerationLease {
    const generation = this.current;
    generation.active++;
    return generation;
  }

  /** That request was answered. */
  leave(generation: GenerationLease): void {
    generation.active--;
    if (generation.active === 0 && generation !== this.current) {
      this.draining.delete(generation);
      generation.markIdle();
    }
  }

  /** Start a new generation; resolves when no request of any earlier generation is running. */
  advance(): Promise<void> {
    const previous = this.current;
    this.current = new Generation();
    if (previous.active > 0) this.draining.add(previous);
    else previous.markIdle();
    return Promise.all([...this.draining].map((generation) => generation.idle)).then(() => undefined);
  }

  /** Requests still running in superseded generations (for logs and tests). */
  get drainingRequests(): number {
    let total = 0;
    for (const generation of this.draining) total += generation.active;
    return total;
  }
}
