/**
 * One `/metrics` for `serve --workers N`: a scrape may reach any worker, and it must see the
 * whole process, not the one worker that happened to take the connection.
 *
 * The worker that takes the scrape asks the primary (over the cluster IPC channel); the primary
 * asks every worker that is listening for its registry as JSON, merges them with prom-client's
 * `AggregatorRegistry.aggregate` (each metric by its `aggregator`: counters and histograms
 * summed, gauges as declared in metrics.ts) and sends the text back. prom-client's own
 * `clusterMetrics()` is not used because it asks every forked worker, including one that is
 * still starting and cannot answer yet, which would fail the scrape after its 5 s timeout.
 *
 * A worker that does not answer in time fails the scrape rather than leaving a hole in the
 * sums: a partial counter would look like a reset to Prometheus.
 */
import cluster, { type Worker } from 'node:cluster';
import { AggregatorRegistry, type Registry } from 'prom-client';
import type { MetricsExposition } from '../../core/observability/engine-view.js';

const COLLECT = 'rcpgw:metrics-collect'; // primary → worker: send your registry
const COLLECTED = 'rcpgw:metrics-collected'; // worker → primary: the registry as JSON
const SCRAPE = 'rcpgw:metrics-scrape'; // worker → primary: a scrape arrived, merge every worker
const SCRAPED = 'rcpgw:metrics-scraped'; // primary → worker: the merged text, or why not

/** How long one merged scrape may take before it fails. */
export const CLUSTER_SCRAPE_TIMEOUT_MS = 3_000;

interface Message {
  type: string;
  id: number;
  metrics?: object[];
  text?: string;
  error?: string;
}

/**
 * Send over the IPC channel without ever throwing: a channel that closed meanwhile (the peer is
 * exiting) would otherwise raise an 'error' event nobody handles. The peer's timeout covers it.
 */
const ignoreSendError = (): void => undefined;

function toPrimary(message: Message): void {
  if (process.connected) process.send?.(message, undefined, undefined, ignoreSendError);
}

function toWorker(worker: Worker, message: Message): void {
  if (worker.isConnected()) worker.send(message, ignoreSendError);
}

function isMessage(value: unknown, type: string): value is Message {
  return (
    typeof value === 'object' &&
    value !== null &&
    (value as { type?: unknown }).type === type &&
    typeof (value as { id?: unknown }).id === 'number'
  );
}

/** A promise that rejects with `what()` after `ms`, cleared when `settle` is called. */
function deadline(ms: number, what: () => string): { expired: Promise<never>; settle: () => void } {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const expired = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(what())), ms);
  });
  expired.catch(() => undefined);
  return { expired, settle: () => clearTimeout(timer) };
}

/**
 * In a worker: answers the primary's collection requests with this worker's registry, and serves
 * `/metrics` by asking the primary for the merged text.
 */
export class ClusterMetricsExposition implements MetricsExposition {
  private nextId = 0;
  private readonly pending = new Map<number, { resolve: (text: string) => void; reject: (err: Error) => void }>();
  private readonly onMessage = (message: unknown): void => {
    if (isMessage(message, COLLECT)) {
      this.registry.getMetricsAsJSON().then(
        (metrics) => toPrimary({ type: COLLECTED, id: message.id, metrics }),
        (err: Error) => toPrimary({ type: COLLECTED, id: message.id, error: err.message }),
      );
    } else if (isMessage(message, SCRAPED)) {
      const waiter = this.pending.get(message.id);
      this.pending.delete(message.id);
      if (message.error !== undefined) waiter?.reject(new Error(message.error));
      else waiter?.resolve(message.text ?? '');
    }
  };

  constructor(private readonly registry: Registry) {
    process.on('message', this.onMessage);
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  async expose(): Promise<string> {
    const id = this.nextId++;
    const answer = new Promise<string>((resolve, reject) => this.pending.set(id, { resolve, reject }));
    const timer = deadline(CLUSTER_SCRAPE_TIMEOUT_MS + 1_000, () => 'the primary did not answer the metrics scrape');
    toPrimary({ type: SCRAPE, id });
    try {
      return await Promise.race([answer, timer.expired]);
    } finally {
      timer.settle();
      this.pending.delete(id);
    }
  }

  close(): void {
    process.off('message', this.onMessage);
  }
}

/** In the primary: merge every listening worker's registry whenever a worker is scraped. */
export function serveClusterMetrics(listeningWorkers: () => Iterable<Worker>): void {
  let nextId = 0;
  const collections = new Map<number, (worker: Worker, answer: Message) => void>();

  const collect = async (): Promise<string> => {
    const id = nextId++;
    const workers = [...listeningWorkers()].filter((worker) => worker.isConnected());
    const registries = new Map<Worker, object[]>();
    const all = new Promise<void>((resolve, reject) => {
      collections.set(id, (worker, answer) => {
        if (answer.error !== undefined) reject(new Error(`worker ${worker.id} could not read its metrics: ${answer.error}`));
        registries.set(worker, answer.metrics ?? []);
        if (workers.every((w) => registries.has(w))) resolve();
      });
      if (workers.length === 0) resolve();
    });
    const timer = deadline(
      CLUSTER_SCRAPE_TIMEOUT_MS,
      () => `${workers.length - registries.size} worker(s) did not report their metrics within ${CLUSTER_SCRAPE_TIMEOUT_MS} ms`,
    );
    for (const worker of workers) toWorker(worker, { type: COLLECT, id });
    try {
      await Promise.race([all, timer.expired]);
    } finally {
      timer.settle();
      collections.delete(id);
    }
    return AggregatorRegistry.aggregate([...registries.values()]).metrics();
  };

  cluster.on('message', (worker: Worker, message: unknown) => {
    if (isMessage(message, COLLECTED)) {
      collections.get(message.id)?.(worker, message);
    } else if (isMessage(message, SCRAPE)) {
      collect().then(
        (text) => toWorker(worker, { type: SCRAPED, id: message.id, text }),
        (err: Error) => toWorker(worker, { type: SCRAPED, id: message.id, error: err.message }),
      );
    }
  });
}
