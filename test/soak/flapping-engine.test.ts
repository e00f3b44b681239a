/**
 * A bounded soak: 20,000 federated retrieves through the gateway service (in this process, so
 * the heap can be measured after a forced GC) against two real stdio test engines, one of them
 * flapping between healthy and failing every 1,000 requests, so its breaker opens and closes
 * over and over. Every request must be answered exactly once, always with the steady engine's
 * hits, and the heap after GC at the end must not have grown much past an early checkpoint.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import path from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { parseConfig } from '../../src/node/config/load.js';
import { Gateway } from '../../src/core/gateway/gateway.js';
import { silentLogger } from '../../src/node/observability/log.js';
import { nodeTransports } from '../../src/node/upstream/factory.js';
import { Session } from '../../src/core/session/session.js';
import type { ResponseMessage } from '../../src/core/protocol/jsonrpc.js';
import { REPO_ROOT, stdioEngineCommand, tmpDir, writeControl } from '../support/processes.js';
import { enginePids, expectAllGone, QUERY } from '../resilience/helpers.js';

const TOTAL = 20_000;
const FLIP_EVERY = 1_000;
const CONCURRENCY = 32;
const EARLY_CHECKPOINT = 4_000;

setFlagsFromString('--expose_gc');
const gc = runInNewContext('gc') as () => void;

let gateway: Gateway;
let control: string;
let flappyEvents: string;
const transitions: string[] = [];

beforeAll(async () => {
  const dir = tmpDir('rcp-soak-');
  control = path.join(dir, 'control.json');
  flappyEvents = path.join(dir, 'flappy-events.ndjson');
  writeControl(control, { fault: 'ok' });
  const { config } = parseConfig(
    {
      engines: [
        { id: 'steady', transport: 'stdio', command: stdioEngineCommand(['--id', 'steady', '--id-prefix', 's-']) },
        // --events only records (re)starts and requests of the flapping engine: small enough for 20k calls.
        {
          id: 'flappy',
          transport: 'stdio',
          command: stdioEngineCommand(['--id', 'flappy', '--control', control, '--events', flappyEvents]),
        },
      ],
      gateway: {
        logLevel: 'silent',
        // A short window, so each phase (≈ 1,000 requests) dominates it and the breaker follows the flapping.
        breaker: { volumeThreshold: 5, resetTimeoutMs: 20, maxResetTimeoutMs: 200, rollingWindowMs: 300, rollingBuckets: 3 },
      },
    },
    { baseDir: REPO_ROOT },
  );
  gateway = new Gateway(config, {
    logger: silentLogger(),
    transports: nodeTransports,
    hooks: {
      onBreakerTransition: (engine, from, to) => {
        if (engine === 'flappy') transitions.push(`${from}>${to}`);
      },
    },
  });
  await gateway.start();
});

afterAll(async () => {
  const pids = enginePids(flappyEvents);
  await gateway.stop();
  await expectAllGone(pids);
});

it(`answers ${TOTAL} requests against a flapping engine exactly once, with bounded memory`, async () => {
  const session = new Session(gateway, { transport: 'http', stateless: true });
  const answers = new Map<number, number>();
  let errors = 0;
  let withoutSteady = 0;
  let sent = 0;
  let earlyHeap = 0;

  const one = async (id: number): Promise<void> => {
    const reply = (await session.handle({
      value: { jsonrpc: '2.0', id, method: 'retrieve', params: { query: QUERY, k: 5 } },
    })) as ResponseMessage;
    answers.set(id, (answers.get(id) ?? 0) + 1);
    if ('error' in reply) errors++;
    else if (!(reply.result.hits as Array<{ meta: { engine: string } }>).some((h) => h.meta.engine === 'steady')) withoutSteady++;
  };

  const worker = async (): Promise<void> => {
    while (sent < TOTAL) {
      const id = ++sent;
      if (id % FLIP_EVERY === 0) writeControl(control, { fault: (id / FLIP_EVERY) % 2 === 1 ? 'fail' : 'ok' });
      await one(id);
    }
  };

  // Warm up, then measure an early checkpoint with the pipeline quiet.
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (sent < EARLY_CHECKPOINT) await one(++sent);
    }),
  );
  gc();
  earlyHeap = process.memoryUsage().heapUsed;
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  gc();
  const lateHeap = process.memoryUsage().heapUsed;
  const mb = (n: number): string => `${(n / 1_048_576).toFixed(1)} MB`;
  console.log(
    `soak: ${TOTAL} requests, heap after GC ${mb(earlyHeap)} at ${EARLY_CHECKPOINT} → ${mb(lateHeap)} at ${TOTAL}; ` +
      `rss ${mb(process.memoryUsage().rss)}; breaker transitions ${transitions.length}`,
  );

  expect(answers.size).toBe(TOTAL);
  expect([...answers.values()].every((n) => n === 1)).toBe(true);
  expect(errors).toBe(0);
  expect(withoutSteady).toBe(0);
  // The flapping engine's breaker really did open and close, repeatedly.
  expect(transitions.filter((t) => t.endsWith('>open')).length).toBeGreaterThanOrEqual(3);
  // Recovery is driven by the (time-based) reset timeout while phases are counted in requests, so
  // under heavy CPU load fewer ok-phases see a trial: demand repeated recovery, not one per phase.
  expect(transitions.filter((t) => t === 'half-open>closed').length).toBeGreaterThanOrEqual(2);
  // Generous: 16,000 more requests may not even add half the early heap.
  expect(lateHeap).toBeLessThan(earlyHeap * 1.5);
}, 60_000);
