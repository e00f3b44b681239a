/**
 * The hedging policy alone, in this process: the gateway's own replica set (dist/, the class the
 * gateway builds for `urls`) over three simulated replicas whose latency is a timer — base ±20 %,
 * and the tail on a share of calls — so the figures show what hedging does when the machine is
 * not the bottleneck (on a busy machine the real-process figures are mostly scheduling delay).
 * A simulated replica honours the abort signal like the HTTP transport does.
 */
import path from 'node:path';
import { pathToFileURL } from 'node:url';

function mulberry32(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function simulatedReplica(UpstreamError, { baseMs, tailMs, tailRate, seed }) {
  const random = mulberry32(seed);
  return {
    kind: 'http',
    calls: 0,
    call(method, _params, options) {
      // A replica takes reads once it has answered initialize (upstream/replicas.ts); not a read.
      if (method === 'initialize') return Promise.resolve({ protocolVersion: 1 });
      this.calls += 1;
      const ms = random() < tailRate ? tailMs : baseMs * (0.8 + 0.4 * random());
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => resolve({ hits: [{ id: 'd1', score: 1 }] }), ms);
        options.signal?.addEventListener(
          'abort',
          () => {
            clearTimeout(timer);
            reject(new UpstreamError('aborted', 'call aborted'));
          },
          { once: true },
        );
      });
    },
    notify() {},
    close: () => Promise.resolve(),
  };
}

/** Closed loop: `connections` clients, `count` reads in all; latencies in ms. */
async function run(set, count, connections) {
  const samples = [];
  let sent = 0;
  await Promise.all(
    Array.from({ length: connections }, async () => {
      while (sent < count) {
        sent += 1;
        const t0 = performance.now();
        await set.call('retrieve', { query: 'q' }, { timeoutMs: 30_000, maxResponseBytes: 1_000_000 });
        samples.push(performance.now() - t0);
      }
    }),
  );
  return samples;
}

/** Both policies over fresh simulated replicas with the same seeds; figures as bench/hedging.js reports them. */
export async function simulateHedging(root, { baseMs, tailMs, tailRate, tailReplicas, budget, requests, warmup, connections, stats }) {
  const { ReplicaTransport } = await import(pathToFileURL(path.join(root, 'dist/core/upstream/replicas.js')).href);
  const { UpstreamError } = await import(pathToFileURL(path.join(root, 'dist/core/upstream/errors.js')).href);
  const arm = async (hedge) => {
    const replicas = [0, 1, 2].map((i) =>
      simulatedReplica(UpstreamError, { baseMs, tailMs, tailRate: i < tailReplicas ? tailRate : 0, seed: 11 + i }),
    );
    const set = new ReplicaTransport(replicas, hedge ? { hedge } : {});
    await set.call('initialize', { protocolVersion: 1 }, { timeoutMs: 30_000, maxResponseBytes: 1_000_000 });
    await run(set, warmup, connections);
    const samples = await run(set, requests, connections);
    const upstream = replicas.reduce((sum, r) => sum + r.calls, 0);
    return { ...stats(samples), reads: warmup + requests, upstream, hedges: set.snapshot().hedges };
  };
  return [await arm(undefined), await arm({ budget })];
}
