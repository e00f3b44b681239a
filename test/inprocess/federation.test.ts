/**
 * Federated retrieve in-process (§16.2, §16.3, §9): fan-out to every engine advertising
 * `retrieve`, RRF fusion order, degraded legs, required engines, nothing answered, and progress
 * relayed from the legs. Fake engines behind the in-memory transport; no process, no socket.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { RcpError } from '../../src/core/protocol/errors.js';
import type { JsonObject } from '../../src/core/protocol/jsonrpc.js';
import type { ProgressUpdate } from '../../src/core/service/contract.js';
import { FakeEngine } from '../support/fake-engine.js';
import { startInProcess, type InProcessGateway } from '../support/in-process.js';

interface Hit {
  id: string;
  score: number;
  meta: { engine: string; engineRank: number };
}
interface RetrieveResult {
  hits: Hit[];
  usage: { notes?: string[]; candidates: number };
  _meta: { engines: string[]; degraded?: Array<{ engine: string; code: number; reason: string }>; fusion: string; deadlineMs: number };
}

let running: InProcessGateway | undefined;
afterEach(async () => {
  await running?.stop();
  running = undefined;
});

async function gatewayOver(engines: FakeEngine[], options: Parameters<typeof startInProcess>[1] = {}): Promise<InProcessGateway> {
  running = await startInProcess(engines, options);
  return running;
}

const retrieve = async (gw: InProcessGateway, params: JsonObject): Promise<RetrieveResult> =>
  (await gw.call('retrieve', params)) as unknown as RetrieveResult;

const rejection = async (promise: Promise<unknown>): Promise<RcpError> => {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(RcpError);
  return err as RcpError;
};

describe('fan-out', () => {
  it('asks every engine advertising retrieve (and no other), with headroom, a smaller deadline and the path', async () => {
    const a = new FakeEngine('a');
    const b = new FakeEngine('b');
    const embedOnly = new FakeEngine('embedder', { capabilities: { embed: { dimension: 3 } } });
    // k (4) past the fusion depth (2): each engine is asked for k × fusionHeadroom.
    const gw = await gatewayOver([a, b, embedOnly], { gateway: { fusionDepth: 2 } });
    const result = await retrieve(gw, { query: 'q', k: 4, _meta: { deadlineMs: 5_000 } });

    expect(result._meta.engines).toEqual(['a', 'b']);
    expect(result.hits).toHaveLength(4);
    expect(embedOnly.calls).toEqual([]);
    for (const engine of [a, b]) {
      const [call] = engine.callsOf('retrieve');
      const params = call!.params as { k: number; _meta: { deadlineMs: number; federation: unknown; traceId: string } };
      expect(params.k).toBe(8); // k × fusionHeadroom (2)
      expect(params._meta.deadlineMs).toBeLessThan(5_000);
      expect(params._meta.federation).toEqual({ depth: 2, path: ['rcp-gateway'] });
      expect(params._meta.traceId).toEqual(expect.any(String));
    }
  });

  it('never forwards the gateway vendor key or the client progress token upstream', async () => {
    const a = new FakeEngine('a');
    const gw = await gatewayOver([a]);
    await retrieve(gw, { query: 'q', k: 2, _meta: { 'x-rcpgw': { fusion: 'rrf' }, progressToken: 'client-token' } });
    const meta = (a.callsOf('retrieve')[0]!.params._meta ?? {}) as JsonObject;
    expect(meta['x-rcpgw']).toBeUndefined();
    expect(meta.progressToken).toBeUndefined();
  });
});

describe('fusion order', () => {
  it('ranks by reciprocal rank across engines, independent of which engine answered first', async () => {
    // RRF (k = 60): y = 1/61 + 1/62, z = 1/62 + 1/63, x = 1/61, w = 1/63.
    const hit = (id: string, score: number): { id: string; score: number } => ({ id, score });
    const a = new FakeEngine('a', { hits: [hit('x', 0.9), hit('y', 0.8), hit('z', 0.7)] }).behave({ delayMs: 5 });
    const b = new FakeEngine('b', { hits: [hit('y', 0.5), hit('z', 0.4), hit('w', 0.3)] });
    const gw = await gatewayOver([a, b]);
    const result = await retrieve(gw, { query: 'q', k: 4 });
    expect(result.hits.map((h) => h.id)).toEqual(['y', 'z', 'x', 'w']);
    expect(result.hits[0]!.score).toBeCloseTo(1 / 61 + 1 / 62, 10);
    expect(result._meta.fusion).toBe('rrf');
    // The same lists answered in the other order fuse to the same page.
    a.behave({ delayMs: 0 });
    b.behave({ delayMs: 5 });
    expect((await retrieve(gw, { query: 'q', k: 4 })).hits.map((h) => h.id)).toEqual(['y', 'z', 'x', 'w']);
  });

  it('lets an engine weight tip the order', async () => {
    const a = new FakeEngine('a', { hits: [{ id: 'from-a', score: 1 }] });
    const b = new FakeEngine('b', { hits: [{ id: 'from-b', score: 1 }] });
    const gw = await gatewayOver([a, b], { engines: { b: { weight: 2 } } });
    expect((await retrieve(gw, { query: 'q', k: 2 })).hits.map((h) => h.id)).toEqual(['from-b', 'from-a']);
  });
});

describe('degraded legs', () => {
  it('answers from the engines left, naming each failed leg in _meta.degraded and usage.notes', async () => {
    const ok = new FakeEngine('ok');
    const failing = new FakeEngine('failing').fail(-32603);
    const malformed = new FakeEngine('malformed').behave({ fault: { malformed: true } });
    const gw = await gatewayOver([ok, failing, malformed], { gateway: { retry: { budgetRatio: 0, minPerWindow: 0 } } });
    const result = await retrieve(gw, { query: 'q', k: 3 });
    expect(result._meta.engines).toEqual(['ok']);
    expect(result.hits.every((h) => h.meta.engine === 'ok')).toBe(true);
    expect(result._meta.degraded).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ engine: 'failing', code: -32603, reason: 'engine-error' }),
        expect.objectContaining({ engine: 'malformed', code: -32603, reason: 'malformed' }),
      ]),
    );
    expect(result._meta.degraded).toHaveLength(2);
    expect(result.usage.notes).toEqual(
      expect.arrayContaining(['engine failing dropped: engine-error (-32603)', 'engine malformed dropped: malformed (-32603)']),
    );
  });

  it('drops an answer over maxResponseBytes as too large', async () => {
    const ok = new FakeEngine('ok');
    const bloated = new FakeEngine('bloated').behave({ fault: { oversizedBytes: 4_096 } });
    const gw = await gatewayOver([ok, bloated], { engines: { bloated: { maxResponseBytes: 2_048 } } });
    const result = await retrieve(gw, { query: 'q', k: 3 });
    expect(result._meta.degraded).toEqual([expect.objectContaining({ engine: 'bloated', reason: 'too-large' })]);
  });

  it('answers -32010 listing every engine when none answered, never an empty success', async () => {
    const gw = await gatewayOver([new FakeEngine('a').fail(-32603), new FakeEngine('b').fail(-32010)], {
      gateway: { retry: { budgetRatio: 0, minPerWindow: 0 } },
    });
    const err = await rejection(gw.call('retrieve', { query: 'q', k: 3 }));
    expect(err.code).toBe(-32010);
    expect((err.data?.engines as Array<{ engine: string }>).map((e) => e.engine).sort()).toEqual(['a', 'b']);
  });
});

describe('required engines', () => {
  it('fail the whole call with their own code, even when another engine answered', async () => {
    const ok = new FakeEngine('ok');
    const must = new FakeEngine('must').fail(-32011, { retryAfterMs: 250 });
    const gw = await gatewayOver([ok, must], {
      engines: { must: { required: true } },
      gateway: { retry: { budgetRatio: 0, minPerWindow: 0 } },
    });
    const err = await rejection(gw.call('retrieve', { query: 'q', k: 3 }));
    expect(err.code).toBe(-32011);
    expect(err.data).toMatchObject({ engine: 'must', retryAfterMs: 250 });
    must.heal();
    expect((await retrieve(gw, { query: 'q', k: 3 }))._meta.engines).toEqual(['must', 'ok']);
  });
});

describe('progress (§9)', () => {
  it('relays leg progress to a client that asked, monotone, ending at 1 with partial hits', async () => {
    const slow = new FakeEngine('slow', { capabilities: { retrieve: { maxK: 50 }, streaming: {} } }).behave({
      delayMs: 20,
      progress: [{ progress: 0.5, stage: 'searching' }],
    });
    const fast = new FakeEngine('fast');
    const gw = await gatewayOver([slow, fast]);
    const updates: ProgressUpdate[] = [];
    const result = await gw.call('retrieve', { query: 'q', k: 2, _meta: { progressToken: 'p1' } }, { onProgress: (u) => updates.push(u) });
    expect(result.hits).toHaveLength(2);
    const values = updates.map((u) => u.progress).filter((p): p is number => p !== undefined);
    expect(values.length).toBeGreaterThan(0);
    for (let i = 1; i < values.length; i++) expect(values[i]!).toBeGreaterThanOrEqual(values[i - 1]!);
    expect(values.every((p) => p >= 0 && p <= 1)).toBe(true);
    expect(updates.some((u) => u.stage === 'searching' || (u.message ?? '').includes('slow'))).toBe(true);
    expect(updates.some((u) => Array.isArray((u.partial as { hits?: unknown } | undefined)?.hits))).toBe(true);
  });
});
