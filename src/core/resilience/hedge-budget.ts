/**
 * The hedging budget ("The Tail at Scale", Dean & Barroso): a token bucket that every first
 * attempt of a read fills by `ratio` of a token and every hedge empties by one, so hedges stay
 * within `ratio` of the reads sent, whatever the latency does. The bucket starts empty (no
 * hedge before the engine has earned one) and holds at most `capacity` tokens, so a long calm
 * spell cannot save up a burst of hedges for the next slow spell.
 *
 * Runtime-neutral: no clock, no timers, constant memory.
 */
export class HedgeBudget {
  private tokens = 0;

  constructor(
    /** Hedges allowed per first attempt, e.g. 0.05 = at most 5 % extra requests. */
    readonly ratio: number,
    /** The most hedges that can be taken in a row after a calm spell. */
    readonly capacity = 10,
  ) {}

  /** A first attempt was sent: earn `ratio` of a hedge. */
  earn(): void {
    this.tokens = Math.min(this.capacity, this.tokens + this.ratio);
  }

  /** Take one hedge; false when the budget is spent. */
  tryTake(): boolean {
    // A hair of tolerance: ten earnings of 0.1 add up to 0.9999999999999999 in floating point.
    if (this.tokens < 1 - 1e-9) return false;
    this.tokens = Math.max(0, this.tokens - 1);
    return true;
  }

  get available(): number {
    return this.tokens;
  }
}
