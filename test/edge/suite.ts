/**
 * What every edge runtime must show, against real local HTTP test engines and next to the Node
 * gateway on the same config and engines: identical fused hits, SSE progress relayed, a client
 * that leaves cancelling the legs still running, a hanging engine cut at the deadline with a
 * degraded answer, the breaker opening (and closing again once the engine recovers), an engine
 * down at the first request taken in once it is up, and a cursor signed by the Node gateway
 * paging on the edge. One runtime start per file.
 */
import { createServer, type AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rpc, rpcSse, type JsonRpcResponse } from '../support/http-client.js';
import {
  readEvents,
  startGateway,
  startHttpEngine,
  tmpDir,
  waitForEvent,
  writeControl,
  type EngineEvent,
  type EngineHandle,
  type GatewayHandle,
} from '../support/processes.js';
import { emittedErrors, schemaCrossCheckBanner } from '../support/spec-validator.js';
import type { EdgeRuntime, EdgeServer } from './runtimes.js';

interface Hit {
  id: string;
  score: number;
  meta?: Record<string, unknown>;
}
interface Degraded {
  engine: string;
  code: number;
  reason: string;
}
interface RetrieveResult {
  hits: Hit[];
  nextCursor?: string;
  _meta: { engines: string[]; degraded?: Degraded[]; traceId?: string };
}
interface CatalogEntry {
  id: string;
  _meta: { breaker: string };
}

const SECRET = 'edge-and-node-share-this-cursor-secret';
const ENGINES = ['alpha', 'beta', 'slow', 'flaky'] as const;
type EngineId = (typeof ENGINES)[number] | 'late';

const engineSubset = (...engines: EngineId[]): Record<string, unknown> => ({ 'x-rcpgw': { engines } });

/** Retry `attempt` until it returns a value (not undefined) or `timeoutMs` passes; for state that moves with time. */
async function eventually<T>(attempt: () => Promise<T | undefined>, timeoutMs: number, what: string): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await attempt();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** A port nothing listens on now (for an engine started later). */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** The gateway's JSON log lines in a runtime's output. */
function logLines(output: string): Array<Record<string, unknown>> {
  return output.split('\n').flatMap((line) => {
    const start = line.indexOf('{"level"');
    if (start < 0) return [];
    try {
      return [JSON.parse(line.slice(start)) as Record<string, unknown>];
    } catch {
      return [];
    }
  });
}

export function edgeSuite(runtime: EdgeRuntime): void {
  const title = runtime.unavailable ? `${runtime.name} (skipped: ${runtime.unavailable})` : runtime.name;
  describe.skipIf(runtime.unavailable !== undefined)(title, () => {
    const dir = tmpDir('rcp-edge-');
    const control = (id: EngineId): string => `${dir}/${id}.json`;
    const engines = {} as Record<EngineId, EngineHandle>;
    /** Where the `late` engine will listen: nothing is there when the gateways start. */
    let latePort: number;
    let node: GatewayHandle;
    let edge: EdgeServer;

    function behave(overrides: Partial<Record<EngineId, Record<string, unknown>>> = {}): void {
      for (const id of ENGINES) writeControl(control(id), { fault: 'ok', progressFrames: 2, ...overrides[id] });
    }

    beforeAll(async () => {
      behave();
      for (const id of ENGINES) {
        // beta ranks in reverse, so fusion has two different orders to reconcile.
        engines[id] = await startHttpEngine(['--id', id, '--control', control(id), ...(id === 'beta' ? ['--reverse'] : [])]);
      }
      latePort = await freePort();
      const config = {
        engines: [
          { id: 'alpha', transport: 'http', url: engines.alpha.url },
          { id: 'beta', transport: 'http', url: engines.beta.url, weight: 0.7 },
          { id: 'slow', transport: 'http', url: engines.slow.url },
          {
            id: 'flaky',
            transport: 'http',
            url: engines.flaky.url,
            breaker: { volumeThreshold: 3, errorThresholdPercentage: 50, resetTimeoutMs: 400, maxResetTimeoutMs: 400 },
          },
          { id: 'late', transport: 'http', url: `http://127.0.0.1:${latePort}/rcp` },
        ],
        gateway: {
          cursorSecret: SECRET,
          progressFramesPerSecond: 1000,
          // Frequent heartbeats: workerd notices a client gone when it next writes to it.
          sseHeartbeatMs: 100,
          // Every failure reaches the breaker once: no retries to count around.
          retry: { budgetRatio: 0, minPerWindow: 0 },
          // Far from the time a cancel takes: an engine call aborted soon after a client left was aborted by its leaving.
          deadlineMs: 20_000,
          engineTimeoutMs: 20_000,
          // An engine that is down is retried soon (the `late` engine).
          restartDelayMs: 100,
          restartMaxDelayMs: 300,
        },
      };
      node = await startGateway({ config });
      edge = await runtime.start(config);
    });

    afterAll(async () => {
      await edge?.stop();
      await node?.stop();
      for (const id of [...ENGINES, 'late'] as const) await engines[id]?.stop();
      console.log(schemaCrossCheckBanner());
      expect(emittedErrors()).toEqual([]);
    });

    const requestOf = (id: EngineId, query: string): Promise<EngineEvent> =>
      waitForEvent(engines[id].eventsFile, (e) => e.ev === 'request' && e.method === 'retrieve' && e.params?.query === query);
    const abortOf = (id: EngineId, request: EngineEvent): Promise<EngineEvent> =>
      waitForEvent(engines[id].eventsFile, (e) => e.ev === 'abort' && e.id === request.id && e.t >= request.t, 15_000);
    /** The engine saw its request aborted because the client left: soon after, not at a timeout. */
    const expectCancelledSoon = async (id: EngineId, request: EngineEvent, leftAt: number): Promise<void> => {
      const abort = await abortOf(id, request);
      expect(abort.t - leftAt).toBeLessThan(5_000);
    };

    it('answers a federated retrieve with the fused hits the Node gateway gives', async () => {
      behave();
      const params = { query: 'retrieval fusion ranking graph', k: 8, _meta: engineSubset('alpha', 'beta') };
      const [onNode, onEdge] = await Promise.all([
        rpc<RetrieveResult>(node.url, 'retrieve', params),
        rpc<RetrieveResult>(edge.url, 'retrieve', params),
      ]);
      expect(onEdge.error).toBeUndefined();
      expect(onEdge.result!.hits.length).toBe(8);
      expect(onEdge.result!.hits).toEqual(onNode.result!.hits);
      expect(onEdge.result!._meta.engines).toEqual(['alpha', 'beta']);
      // The request line, as the Node gateway writes it, with the trace id the answer carries.
      const traceId = onEdge.result!._meta.traceId;
      const line = await eventually(
        async () => logLines(edge.output()).find((l) => l.msg === 'request' && l.traceId === traceId),
        5_000,
        'request line',
      );
      expect(line).toMatchObject({ method: 'retrieve', outcome: 'ok', engines: ['alpha', 'beta'], code: 0 });
    });

    it('relays progress over SSE under the client’s token, then the same final answer', async () => {
      // Frames 50 ms apart: the relay coalesces frames that arrive together (progressFramesPerSecond).
      behave({ alpha: { progressFrames: 3, progressIntervalMs: 50 } });
      const params = { query: 'retrieval stream engine', k: 5, _meta: engineSubset('alpha', 'beta') };
      const reply = await rpcSse(edge.url, 'retrieve', params, { progressToken: 'edge-progress' });
      expect(reply.contentType).toContain('text/event-stream');
      expect(reply.parseErrors).toEqual([]);
      for (const frame of reply.progress) expect(frame.progressToken).toBe('edge-progress');
      const messages = reply.progress.map((p) => p.message ?? '');
      expect(messages.some((m) => m.includes('from engine alpha') && /retrieve [1-3]\/3/.test(m))).toBe(true); // the engine's own frame, relayed
      expect(messages.some((m) => m.startsWith('2 of 2 engines answered'))).toBe(true);
      expect(reply.framesAfterFinal).toBe(0);
      const plain = await rpc<RetrieveResult>(node.url, 'retrieve', params);
      expect((reply.final?.result as unknown as RetrieveResult).hits).toEqual(plain.result!.hits);
    });

    it('a client leaving mid-SSE cancels the leg still running, not the one that answered', async () => {
      behave({ slow: { fault: 'hang', progressFrames: 1 } });
      const query = `edge leaves mid-stream ${runtime.name}`;
      const leave = new AbortController();
      let leftAt = 0;
      const reply = await rpcSse(
        edge.url,
        'retrieve',
        { query, k: 4, _meta: engineSubset('alpha', 'slow') },
        {
          progressToken: 'gone',
          signal: leave.signal,
          onFrame: (frame) => {
            const message = String((frame as { params?: { message?: unknown } }).params?.message ?? '');
            if (message.startsWith('1 of 2 engines answered')) {
              leftAt = Date.now();
              leave.abort();
            }
          },
        },
      );
      expect(reply.aborted).toBe(true);
      expect(reply.final).toBeUndefined();
      await expectCancelledSoon('slow', await requestOf('slow', query), leftAt);
      const alphaRequest = await requestOf('alpha', query);
      expect(readEvents(engines.alpha.eventsFile).some((e) => e.ev === 'abort' && e.id === alphaRequest.id && e.t >= alphaRequest.t)).toBe(
        false,
      );
    });

    const unnoticed = runtime.silentDisconnectUnnoticed;
    it.skipIf(unnoticed !== undefined)(
      `a client leaving while waiting on a plain JSON answer cancels the legs${unnoticed ? ` (skipped: ${unnoticed})` : ''}`,
      async () => {
        behave({ slow: { fault: 'hang' } });
        const query = `edge leaves json ${runtime.name}`;
        const leave = new AbortController();
        const pending = rpc(edge.url, 'retrieve', { query, k: 4, _meta: engineSubset('alpha', 'slow') }, { signal: leave.signal });
        const slowRequest = await requestOf('slow', query);
        const leftAt = Date.now();
        leave.abort();
        await expect(pending).rejects.toThrow();
        await expectCancelledSoon('slow', slowRequest, leftAt);
      },
    );

    it('cuts a hanging engine at the deadline and answers degraded, as Node does', async () => {
      behave({ slow: { fault: 'hang' } });
      // Long enough for the healthy engine to answer on a busy machine; far below the 20 s engine timeout.
      const DEADLINE_MS = 2_000;
      const params = (where: string) => ({
        query: `retrieval ranking deadline ${where}`,
        k: 4,
        _meta: { deadlineMs: DEADLINE_MS, ...engineSubset('alpha', 'slow') },
      });
      const started = performance.now();
      const [onEdge, onNode] = await Promise.all([
        rpc<RetrieveResult>(edge.url, 'retrieve', params(runtime.name)).then((reply) => ({ reply, elapsed: performance.now() - started })),
        rpc<RetrieveResult>(node.url, 'retrieve', params('node')),
      ]);
      const { elapsed } = onEdge;
      expect(onEdge.reply.error).toBeUndefined();
      expect(onNode.error).toBeUndefined();
      expect(elapsed).toBeGreaterThanOrEqual(DEADLINE_MS - 100); // it waited for the hanging engine up to the deadline
      expect(elapsed).toBeLessThan(DEADLINE_MS + 3_000);
      const onEdgeResult = onEdge.reply.result!;
      expect(onEdgeResult._meta.engines).toEqual(['alpha']);
      expect(onEdgeResult.hits.length).toBeGreaterThan(0);
      const shape = (d: Degraded[] | undefined): unknown => d?.map(({ engine, code, reason }) => ({ engine, code, reason }));
      expect(shape(onEdgeResult._meta.degraded)).toEqual([{ engine: 'slow', code: expect.any(Number), reason: expect.any(String) }]);
      expect(shape(onEdgeResult._meta.degraded)).toEqual(shape(onNode.result!._meta.degraded));
      await abortOf('slow', await requestOf('slow', `retrieval ranking deadline ${runtime.name}`));
    });

    it('opens the breaker on a failing engine, then closes it once the engine recovers', async () => {
      behave({ flaky: { fault: 'fail', failCode: -32603 } });
      const ask = (n: number): Promise<JsonRpcResponse<RetrieveResult>> =>
        rpc<RetrieveResult>(edge.url, 'retrieve', { query: `edge breaker ${n}`, k: 3, _meta: engineSubset('flaky') });
      const breakerState = async (): Promise<string | undefined> => {
        const catalog = await rpc<{ engines: CatalogEntry[] }>(edge.url, 'catalog/list', {});
        return catalog.result!.engines.find((e) => e.id === 'flaky')?._meta.breaker;
      };
      for (let n = 0; n < 3; n++) expect((await ask(n)).error?.code).toBe(-32010);
      expect(await breakerState()).toBe('open');
      const sentBefore = readEvents(engines.flaky.eventsFile).filter((e) => e.ev === 'request' && e.method === 'retrieve').length;
      const refused = await ask(3);
      expect(refused.error?.code).toBe(-32010);
      expect(JSON.stringify(refused.error?.data)).toContain('circuit-open');
      expect(readEvents(engines.flaky.eventsFile).filter((e) => e.ev === 'request' && e.method === 'retrieve').length).toBe(sentBefore);
      // The transition's log line reaches the runtime's output asynchronously: wait for it.
      const opened = await eventually(
        async () => logLines(edge.output()).find((l) => l.msg === 'circuit breaker transition' && l.engine === 'flaky' && l.to === 'open'),
        10_000,
        'the breaker transition log line',
      );
      expect(opened).toMatchObject({ level: 40, from: 'closed' });
      // Recovered: after the reset timeout a trial call goes through and closes the breaker.
      behave();
      let n = 4;
      await eventually(async () => ((await ask(n++)).result ? true : undefined), 10_000, 'a call through the recovered engine');
      expect(await breakerState()).toBe('closed');
    });

    it('takes in an engine that was down when the first request came, once it is up', async () => {
      behave();
      const ask = (): Promise<JsonRpcResponse<RetrieveResult>> =>
        rpc<RetrieveResult>(edge.url, 'retrieve', { query: 'retrieval index', k: 3, _meta: engineSubset('alpha', 'late') });
      const before = await ask();
      expect(before.result!._meta.engines).toEqual(['alpha']);
      engines.late = await startHttpEngine(['--id', 'late', '--port', String(latePort)]);
      // Its re-initialization is retried on a backoff timer; the next requests see it back.
      const after = await eventually(
        async () => {
          const reply = await ask();
          return reply.result?._meta.engines.includes('late') ? reply : undefined;
        },
        10_000,
        'the late engine in an answer',
      );
      expect(after.result!._meta.engines).toEqual(['alpha', 'late']);
    });

    it('pages with a cursor the Node gateway signed, and Node pages with one the edge signed', async () => {
      behave();
      const params = { query: 'retrieval ranking fusion index', k: 3, _meta: engineSubset('alpha', 'beta') };
      const first = await rpc<RetrieveResult>(node.url, 'retrieve', params);
      const cursor = first.result!.nextCursor;
      expect(typeof cursor).toBe('string');
      const next = { ...params, cursor };
      const [onNode, onEdge] = await Promise.all([
        rpc<RetrieveResult>(node.url, 'retrieve', next),
        rpc<RetrieveResult>(edge.url, 'retrieve', next),
      ]);
      expect(onEdge.error).toBeUndefined();
      expect(onEdge.result!.hits).toEqual(onNode.result!.hits);
      const firstIds = new Set(first.result!.hits.map((h) => h.id));
      expect(onEdge.result!.hits.some((h) => firstIds.has(h.id))).toBe(false);
      const edgeFirst = await rpc<RetrieveResult>(edge.url, 'retrieve', params);
      const back = await rpc<RetrieveResult>(node.url, 'retrieve', { ...params, cursor: edgeFirst.result!.nextCursor });
      expect(back.result!.hits).toEqual(onNode.result!.hits);
      // The secret is what makes them agree: a cursor under another key is refused.
      const forged = `${cursor!.split('.')[0]}.AAAAAAAAAAAAAAAAAAAAAA`;
      const refused = await rpc(edge.url, 'retrieve', { ...params, cursor: forged });
      expect(refused.error).toMatchObject({ code: -32602, data: { field: 'cursor' } });
    });
  });
}
