/**
 * Scrape-time metrics of engines with replicas (`urls`): per replica its state, load, latency,
 * calls and ejections, and per engine its hedges by outcome. Read from the live engine list at
 * each scrape (nothing on the request path); labels are the engine id and the replica's index
 * in `urls` — never its URL, which stays as hidden here as in catalog/list.
 */
import { Counter, Gauge, type Registry } from 'prom-client';
import type { EngineView } from '../../core/observability/engine-view.js';
import type { ReplicaSnapshot } from '../../core/upstream/replica.js';

const PREFIX = 'rcpgw_';
const STATE_VALUE: Record<ReplicaSnapshot['state'], number> = { up: 0, trial: 1, ejected: 2 };
const HEDGE_OUTCOMES = ['sent', 'won', 'lost', 'denied', 'capped'] as const;

export function registerReplicaMetrics(registry: Registry, engines: () => readonly EngineView[]): void {
  const perReplica = (
    name: string,
    help: string,
    /** Undefined leaves the replica out of the series (a latency not measured yet is not 0). */
    read: (replica: ReplicaSnapshot) => number | undefined,
    kind: 'gauge' | 'counter' = 'gauge',
    aggregator: 'sum' | 'max' = 'sum',
  ): void => {
    const labelNames = ['engine', 'replica'] as const;
    const each = (set: (engine: string, replica: string, value: number) => void): void => {
      for (const engine of engines()) {
        for (const replica of engine.replicaSet?.replicas ?? []) {
          const value = read(replica);
          if (value !== undefined) set(engine.id, String(replica.replica), value);
        }
      }
    };
    if (kind === 'counter') {
      const counter: Counter<'engine' | 'replica'> = new Counter({
        name: `${PREFIX}${name}`,
        help,
        labelNames,
        registers: [registry],
        collect: () => {
          counter.reset();
          each((engine, replica, value) => counter.labels(engine, replica).inc(value));
        },
      });
      return;
    }
    const gauge: Gauge<'engine' | 'replica'> = new Gauge({
      name: `${PREFIX}${name}`,
      help,
      labelNames,
      registers: [registry],
      aggregator,
      collect: () => {
        gauge.reset();
        each((engine, replica, value) => gauge.labels(engine, replica).set(value));
      },
    });
  };
  perReplica('engine_replica_state', 'Replica state: 0 up, 1 due for its trial, 2 ejected.', (r) => STATE_VALUE[r.state], 'gauge', 'max');
  perReplica('engine_replica_in_flight', 'Calls to the replica in progress.', (r) => r.inFlight);
  perReplica(
    'engine_replica_latency_ewma_seconds',
    'EWMA of the replica call latency.',
    (r) => (r.ewmaMs === undefined ? undefined : r.ewmaMs / 1000),
    'gauge',
    'max',
  );
  perReplica(
    'engine_replica_calls_total',
    'Calls sent to the replica, initialize included (first attempts, hedges, failovers).',
    (r) => r.calls,
    'counter',
  );
  perReplica('engine_replica_ejections_total', 'Times the replica was taken out of rotation.', (r) => r.ejections, 'counter');

  const hedges: Counter<'engine' | 'outcome'> = new Counter({
    name: `${PREFIX}hedges_total`,
    help: 'Hedged reads by outcome: sent, won (answered first), lost (the first attempt answered first), denied (budget spent), capped (no free maxConcurrent slot).',
    labelNames: ['engine', 'outcome'],
    registers: [registry],
    collect: () => {
      hedges.reset();
      for (const engine of engines()) {
        const counts = engine.replicaSet?.hedges;
        if (counts) for (const outcome of HEDGE_OUTCOMES) hedges.labels(engine.id, outcome).inc(counts[outcome]);
      }
    },
  });
}
