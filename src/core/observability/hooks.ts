/**
 * Events the resilience layer (limiter, retry budget) reports for metrics. Both the engine hooks
 * and the federation hooks extend this, so whichever layer decides can report; the gateway's
 * observability wires each to a counter (names in the README (Operations), kept stable).
 */
export interface ResilienceHooks {
  /** A retry of an upstream call was sent (counted per retry, not per request). */
  onRetry?: (engineId: string, method: string) => void;
  /** A retry was wanted but the retry budget refused it. */
  onRetryBudgetExhausted?: (engineId: string, method: string) => void;
  /** The engine's limiter queue was full: the call was shed without being sent. */
  onShed?: (engineId: string) => void;
}
