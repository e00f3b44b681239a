/**
 * Engine replicas and hedging against real processes: the gateway from dist/ with one engine
 * `rep` whose `urls` are test engines over HTTP.
 *
 * - three replicas, one killed mid-load: every request is answered, with hits, none degraded,
 *   and catalog/list shows the dead replica ejected;
 * - a slow replica: a read it holds is hedged to the other replica and answered from there,
 *   and the slow replica sees its request aborted (the gateway cancelled it);
 * - the budget: with every read slow, the engines receive at most reads × (1 + budget) requests.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { fetch } from 'undici';
import { readEvents, startGateway, startHttpEngine, waitForEvent, type EngineHandle, type GatewayHandle } from '../support/processes.js';
import { catalog, requestsSeen, retrieve, waitUntil, type RetrieveResult } from './helpers.js';
import type { RpcReply } from '../support/http-client.js';

interface ReplicaMeta {
  replicas: Array<{ replica: number; state: string; calls: number; ejections: number }>;
  hedges: { sent: number; won: number; lost: number; denied: number; capped: number };
}

const running: Array<EngineHandle | GatewayHandle> = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((p) => p.stop()));
});

async function engines(argsOf: string[][]): Promise<EngineHandle[]> {
  const started = await Promise.all(argsOf.map((args, i) => startHttpEngine(['--id', `replica-${i}`, ...args])));
  running.push(...started);
  return started;
}

async function gateway(urls: string[], extra: Record<string, unknown> = {}): Promise<GatewayHandle> {
  const gw = await startGateway({
    config: {
      gateway: { logLevel: 'warn', deadlineMs: 10_000, engineTimeoutMs: 8_000 },
      engines: [{ id: 'rep', transport: 'http', urls, maxConcurrent: 64, ...extra }],
    },
  });
  running.push(gw);
  return gw;
}

async function replicaMeta(url: string): Promise<ReplicaMeta> {
  const entry = (await catalog(url)).get('rep') as unknown as { _meta: { 'x-rcpgw': ReplicaMeta } };
  return entry._meta['x-rcpgw'];
}

function expectAnswered(res: RpcReply<RetrieveResult>): void {
  expect(res.status).toBe(200);
  expect(res.error).toBeUndefined();
  expect(res.result!.hits.length).toBeGreaterThan(0);
  expect(res.result!._meta.degraded ?? []).toEqual([]);
}

describe('engine replicas', () => {
  it('loses no answer when a replica dies mid-load', async () => {
    const replicas = await engines([0, 1, 2].map(() => ['--fault', 'slow', '--delay-ms', '15']));
    const gw = await gateway(replicas.map((r) => r.url));
    const victim = replicas[1]!;
    const answers: Array<RpcReply<RetrieveResult>> = [];
    let sent = 0;
    const worker = async (): Promise<void> => {
      while (sent < 240) {
        sent += 1;
        if (sent === 80) victim.proc.kill('SIGKILL'); // with requests of its own in flight
        answers.push(await retrieve(gw.url));
      }
    };
    await Promise.all(Array.from({ length: 8 }, worker));
    expect(victim.proc.signalCode).toBe('SIGKILL');
    expect(answers).toHaveLength(240);
    for (const res of answers) expectAnswered(res);
    const meta = await replicaMeta(gw.url);
    // Out of rotation: ejected, or (had a cooldown just run out) due for a trial it will fail.
    expect(meta.replicas[1]!.replica).toBe(1);
    expect(['ejected', 'trial']).toContain(meta.replicas[1]!.state);
    expect(meta.replicas[1]!.ejections).toBeGreaterThanOrEqual(1);
    expect(meta.replicas.filter((r) => r.state === 'up')).toHaveLength(2);
    // The dead replica had taken a share of the load before it died.
    expect(requestsSeen(victim.eventsFile)).toBeGreaterThan(0);
    // Engine URLs stay hidden: the catalog names replicas by index only.
    expect(JSON.stringify(await catalog(gw.url).then((c) => [...c.values()]))).not.toContain('127.0.0.1');
  });

  it('hedges a read the slow replica holds to the other one, and cancels it upstream', async () => {
    const [slow, fast] = await engines([['--fault', 'slow', '--delay-ms', '5000'], []]);
    const gw = await gateway([slow!.url, fast!.url], { hedge: { delayMs: 100, budget: 1 } });
    for (let i = 0; i < 20; i++) {
      const started = Date.now();
      expectAnswered(await retrieve(gw.url));
      // None waited for the slow replica's five seconds (generous: the machine may be busy).
      expect(Date.now() - started).toBeLessThan(2_500);
    }
    const reads = readEvents(slow!.eventsFile).filter((e) => e.ev === 'request' && e.method === 'retrieve');
    const slowReads = reads.length;
    expect(slowReads).toBeGreaterThan(0);
    // Every read the slow replica took was aborted by the gateway once the other replica answered.
    // The engine logs an abort when its socket closes, which may be after the answer: wait, read by read.
    for (const read of reads) await waitForEvent(slow!.eventsFile, (e) => e.ev === 'abort' && e.id === read.id);
    // ... and answered none of them (an aborted read is never answered, so this is settled now).
    const readIds = new Set(reads.map((e) => e.id));
    expect(readEvents(slow!.eventsFile).filter((e) => e.ev === 'response' && readIds.has(e.id))).toEqual([]);
    const meta = await replicaMeta(gw.url);
    // Each read the slow replica took was either hedged away from it (won) or itself a hedge of a
    // read the other replica then answered (lost); none was ever answered by it.
    expect(meta.hedges.won).toBeGreaterThanOrEqual(1);
    expect(meta.hedges.sent).toBe(meta.hedges.won + meta.hedges.lost);
    expect(meta.hedges.sent).toBeGreaterThanOrEqual(slowReads);
  });

  it('keeps hedges within the budget: the engines receive at most reads × (1 + budget) requests', async () => {
    const replicas = await engines([0, 1].map(() => ['--fault', 'slow', '--delay-ms', '300']));
    const gw = await gateway(
      replicas.map((r) => r.url),
      { hedge: { delayMs: 50, budget: 0.1 } },
    );
    const answers = await Promise.all(Array.from({ length: 30 }, () => retrieve(gw.url)));
    for (const res of answers) expectAnswered(res);
    const received = (): number => replicas.reduce((sum, r) => sum + requestsSeen(r.eventsFile), 0);
    // 30 reads earn 3 hedges; every read was slow enough to want one. A hedge that lost is aborted
    // once the first replica answers, so its replica may log it only after that answer: wait for it.
    await waitUntil('the hedges to reach the engines', () => received() >= 33);
    expect(received()).toBe(33);
    const meta = await replicaMeta(gw.url);
    expect(meta.hedges.sent).toBe(3);
    expect(meta.hedges.denied).toBe(27);
    const metrics = await fetch(`${new URL(gw.url).origin}/metrics`).then((r) => r.text());
    expect(metrics).toMatch(/rcpgw_hedges_total\{engine="rep",outcome="sent"\} 3/);
    expect(metrics).toMatch(/rcpgw_engine_replica_calls_total\{engine="rep",replica="1"\} \d+/);
  });

  it('counts hedges against maxConcurrent: with every slot taken no read is hedged, with slots free they are', async () => {
    const replicas = await engines([0, 1].map(() => ['--fault', 'slow', '--delay-ms', '1500']));
    // Every read may hedge after 400 ms (budget 1): only the engine's cap of 4 can stop a hedge.
    const gw = await gateway(
      replicas.map((r) => r.url),
      { maxConcurrent: 4, hedge: { delayMs: 400, budget: 1 } },
    );
    const received = (): number => replicas.reduce((sum, r) => sum + requestsSeen(r.eventsFile), 0);
    // Four reads hold the four slots: no hedge finds one free, and the engines see four requests.
    for (const res of await Promise.all(Array.from({ length: 4 }, () => retrieve(gw.url)))) expectAnswered(res);
    expect(received()).toBe(4);
    let meta = await replicaMeta(gw.url);
    expect(meta.hedges).toMatchObject({ sent: 0, capped: 4, denied: 0 });
    // Two reads leave two slots free: both are hedged (a capped hedge spent no token, so the budget has them).
    for (const res of await Promise.all(Array.from({ length: 2 }, () => retrieve(gw.url)))) expectAnswered(res);
    await waitUntil('the hedges to reach the engines', () => received() >= 8);
    expect(received()).toBe(8);
    meta = await replicaMeta(gw.url);
    expect(meta.hedges).toMatchObject({ sent: 2, capped: 4, denied: 0 });
    const metrics = await fetch(`${new URL(gw.url).origin}/metrics`).then((r) => r.text());
    expect(metrics).toMatch(/rcpgw_hedges_total\{engine="rep",outcome="capped"\} 4/);
  });

  it('brings in a replica that was down at start only once it has answered initialize, and no read fails on the way', async () => {
    // A port that refuses while the gateway starts, then serves: the replica comes up late.
    const placeholder = await startHttpEngine(['--id', 'replica-1']);
    const latePort = placeholder.port;
    await placeholder.stop();
    const [early] = await engines([['--single-session']]); // stateful (§5.2): reads before initialize get -32001
    const gw = await gateway([early!.url, `http://127.0.0.1:${latePort}/rcp`]);
    expect((await replicaMeta(gw.url)).replicas.map((r) => r.state)).toEqual(['up', 'ejected']);
    const late = await startHttpEngine(['--id', 'replica-1', '--single-session', '--port', String(latePort)]);
    running.push(late);

    const answers: Array<RpcReply<RetrieveResult>> = [];
    await waitUntil('the late replica to take reads', async () => {
      answers.push(await retrieve(gw.url));
      return requestsSeen(late.eventsFile) > 0;
    });
    for (const res of answers) expectAnswered(res);
    const seen = readEvents(late.eventsFile).filter((e) => e.ev === 'request');
    expect(seen[0]!.method).toBe('initialize'); // before any read
    expect(readEvents(late.eventsFile).filter((e) => e.ev === 'response' && e.code === -32001)).toEqual([]);
    expect((await replicaMeta(gw.url)).replicas[1]!.state).toBe('up');
  });
});
