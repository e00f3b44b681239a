/**
 * Three gateway replicas behind a real load balancer (HAProxy on deploy/haproxy/haproxy.cfg),
 * sharing two real test engines, with what a cluster gives each replica: a config volume
 * updated by the kubelet's `..data` swap and a cursor key from the environment. Shown here:
 *  - requests spread over every replica;
 *  - a cursor issued by one replica pages on another (one shared key, §10);
 *  - a config rolled to one replica after another keeps every answer coming;
 *  - a rolling restart under load (SIGTERM one replica at a time) ends with zero failed and zero
 *    duplicate answers, and the balancer's health checks (`/readyz`, 503 from the start of the
 *    drain) take each draining replica out before it stops, so HAProxy never had to retry.
 * Skipped, visibly, where haproxy is not installed (.ci/run installs it).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rpc } from '../support/http-client.js';
import { readEvents } from '../support/processes.js';
import { suiteProcesses } from '../support/suite.js';
import { metricValue, origin, scrape, until } from '../observability/support.js';
import { hasHaproxy, startBalancer, type Balancer } from './support/haproxy.js';
import { ReplicaSet, retrieveThrough, startLoad, type Answer, type Replica } from './support/replicas.js';

const procs = suiteProcesses();
/** The replicas' lame-duck time: longer than the balancer needs to see /readyz fail (0.7 s). */
const DRAIN_DELAY_MS = 2_000;

function gatewayConfig(engines: Array<{ id: string; url: string }>): Record<string, unknown> {
  return {
    engines: engines.map(({ id, url }) => ({ id, transport: 'http', url })),
    gateway: { cursorSecret: '${RCPGW_CURSOR_SECRET}', watchConfig: true, drainDelayMs: DRAIN_DELAY_MS, drainTimeoutMs: 5_000 },
  };
}

const serverName = (replica: Replica): string => `gw${replica.index + 1}`;
const failed = (answers: readonly Answer[]): Answer[] => answers.filter((a) => a.error !== undefined || a.answeredId !== a.id);

/** How often each query reached one engine (a retry anywhere would show as 2). */
function executions(eventsFile: string): Map<string, number> {
  const counts = new Map<string, number>();
  for (const event of readEvents(eventsFile)) {
    if (event.ev !== 'request' || event.method !== 'retrieve') continue;
    const query = String(event.params?.query ?? '');
    counts.set(query, (counts.get(query) ?? 0) + 1);
  }
  return counts;
}

describe.skipIf(!hasHaproxy())('three replicas behind HAProxy (skipped where haproxy is not installed)', () => {
  let engines: Array<{ id: string; url: string; eventsFile: string }>;
  let extraEngine: { id: string; url: string };
  let set: ReplicaSet;
  let balancer: Balancer;

  beforeAll(async () => {
    const [a, b, c] = await Promise.all(
      ['a', 'b', 'c'].map((id) => procs.engine(['--id', id, '--id-prefix', `${id}:`, '--delay-ms', '0'])),
    );
    engines = [
      { id: 'a', url: a!.url, eventsFile: a!.eventsFile },
      { id: 'b', url: b!.url, eventsFile: b!.eventsFile },
    ];
    extraEngine = { id: 'c', url: c!.url };
    set = await ReplicaSet.start(3, gatewayConfig(engines));
    procs.defer(() => set.stopAll());
    balancer = await startBalancer(set.addresses());
    procs.defer(() => balancer.stop());
    for (const replica of set.replicas)
      await until(`${serverName(replica)} UP`, async () => ((await balancer.status(serverName(replica))) === 'UP' ? true : undefined));
  }, 120_000);

  afterAll(async () => {
    // No request ever needed a second try: health checks alone kept traffic off draining replicas.
    const backend = (await balancer.stats()).find((row) => row.svname === 'BACKEND');
    expect({ retries: backend?.wretr, redispatches: backend?.wredis }).toEqual({ retries: '0', redispatches: '0' });
  });

  it('spreads requests over every replica', async () => {
    const answers: Answer[] = [];
    for (let n = 1; n <= 9; n++) answers.push(await retrieveThrough(balancer.url, `S${n}`, `retrieval spread${n}`));
    expect(failed(answers)).toEqual([]);
    expect(new Set(answers.map((a) => a.servedBy))).toEqual(new Set(['gw1', 'gw2', 'gw3']));
  });

  it('pages a cursor issued by one replica on the others', async () => {
    const [first, second, third] = set.replicas.map((replica) => replica.url());
    const query = { query: 'retrieval fusion ranking', k: 3 };
    const page1 = await rpc<{ hits: Array<{ id: string }>; nextCursor?: string }>(first!, 'retrieve', query);
    const cursor = page1.result?.nextCursor;
    expect(typeof cursor).toBe('string');
    const onSecond = await rpc<{ hits: Array<{ id: string }> }>(second!, 'retrieve', { ...query, cursor });
    const onThird = await rpc<{ hits: Array<{ id: string }> }>(third!, 'retrieve', { ...query, cursor });
    expect(onSecond.error).toBeUndefined();
    expect(onSecond.result?.hits.length).toBe(3);
    // Every replica serves the same next page, and it continues the first one.
    expect(onThird.result?.hits).toEqual(onSecond.result?.hits);
    const firstIds = new Set(page1.result!.hits.map((h) => h.id));
    for (const hit of onSecond.result!.hits) expect(firstIds.has(hit.id)).toBe(false);
  });

  it('keeps answering while a config is rolled to one replica after another', async () => {
    const load = startLoad(balancer.url, { tag: 'roll', concurrency: 2, pauseMs: 5 });
    const next = gatewayConfig([...engines, extraEngine]);
    for (const replica of set.replicas) {
      set.rollConfig(replica, next);
      await until(`${serverName(replica)} reloaded`, async () =>
        metricValue(await scrape(origin(replica.url())), 'rcpgw_config_reloads_total', { result: 'ok' }) >= 1 ? true : undefined,
      );
    }
    const answers = await load.stop();
    expect(answers.length).toBeGreaterThan(10);
    expect(failed(answers)).toEqual([]);
    // Every replica now fans out to the engine the new config added.
    for (const replica of set.replicas) {
      const answer = await rpc<{ _meta: { engines: string[] } }>(replica.url(), 'retrieve', { query: 'fusion', k: 2 });
      expect(answer.result?._meta.engines).toContain('c');
    }
  });

  it(
    'restarts every replica under load with zero failed and zero duplicate answers; each leaves the balancer before it stops',
    { timeout: 240_000 },
    async () => {
      const load = startLoad(balancer.url, { tag: 'restart', concurrency: 2, pauseMs: 10 });
      await until('some traffic', () => (load.answers.length >= 30 ? true : undefined));
      for (const replica of set.replicas) {
        const process = replica.handle!.proc;
        const exited = set.stopReplica(replica);
        await until(`${serverName(replica)} DOWN`, async () =>
          (await balancer.status(serverName(replica))).startsWith('DOWN') ? true : undefined,
        );
        // Out of rotation while the process still runs (it is in its lame-duck time, /readyz 503).
        expect(process.exitCode, `${serverName(replica)} exited before the balancer took it out`).toBeNull();
        expect(await exited).toBe(0);
        await set.startReplica(replica);
        await until(`${serverName(replica)} UP again`, async () =>
          (await balancer.status(serverName(replica))) === 'UP' ? true : undefined,
        );
      }
      const answers = await load.stop();

      expect(failed(answers)).toEqual([]);
      expect(answers.length).toBeGreaterThan(100);
      expect(new Set(answers.map((a) => a.id)).size).toBe(answers.length);
      expect(new Set(answers.map((a) => a.servedBy))).toEqual(new Set(['gw1', 'gw2', 'gw3']));
      // Each request reached each engine exactly once: nothing was executed twice on the way.
      for (const engine of engines) {
        const counts = executions(engine.eventsFile);
        const notOnce = answers.filter((a) => counts.get(a.query) !== 1).map((a) => `${a.query}: ${counts.get(a.query) ?? 0}`);
        expect(notOnce, `engine ${engine.id}`).toEqual([]);
      }
    },
  );

  // A/B assignment across replicas: an experiment arm must not depend on which replica answers.
  // The harness above (ReplicaSet + startBalancer + startLoad) gives three replicas behind one
  // balancer; the check goes here once assignment exists.
  it.todo('assigns an A/B subject to the same arm on every replica');
});
