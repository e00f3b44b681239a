import type { ReplicaSetSnapshot } from '../upstream/replicas.js';

/**
 * What readiness and scrape-time metrics read about one engine: its live state, never its
 * traffic. The upstream Engine satisfies it; tests can pass plain objects.
 */
export interface EngineView {
  readonly id: string;
  readonly status: string;
  readonly queueDepth: number;
  readonly activeCalls: number;
  readonly breaker: { readonly currentState: string };
  /** Per-replica state and hedge counts, for an engine with replicas. */
  readonly replicaSet?: ReplicaSetSnapshot;
}

/** A metrics registry as the ops routes serve it (Prometheus text at `/metrics`). */
export interface MetricsExposition {
  readonly contentType: string;
  expose(): Promise<string>;
}
