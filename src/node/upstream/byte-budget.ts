/**
 * The gateway-wide bound on engine answer bytes held in memory at once (§15.5). Each answer is
 * already capped by `maxResponseBytes`, but many concurrent large answers (20 × 40 MB SSE
 * streams) add up; every answer being read takes its bytes from this one budget as they arrive
 * and gives them back when it is parsed or dropped. A read that would pass the budget stops at
 * once and fails `too-large`, so the gateway never holds more than the budget plus one chunk.
 */
export class ByteBudget {
  private used = 0;

  constructor(readonly maxBytes: number) {}

  get inUse(): number {
    return this.used;
  }

  /** A holder for one answer's bytes; `free()` returns all it took (idempotent). */
  open(): BudgetHold {
    let held = 0;
    return {
      take: (bytes: number): boolean => {
        if (this.used + bytes > this.maxBytes) return false;
        this.used += bytes;
        held += bytes;
        return true;
      },
      free: (): void => {
        this.used -= held;
        held = 0;
      },
    };
  }
}

export interface BudgetHold {
  /** Take `bytes` more; false (nothing taken) when the budget would be passed. */
  take(bytes: number): boolean;
  free(): void;
}

/** The default of `gateway.maxBufferedUpstreamBytes` (256 MiB), for tools that build transports without a config. */
export const DEFAULT_MAX_BUFFERED_UPSTREAM_BYTES = 268_435_456;
