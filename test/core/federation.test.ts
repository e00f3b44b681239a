/**
 * Federated retrieve behaviour (§16.2, §16.3) with real engines behind a real gateway:
 * fusion tags, partial failure, required engines, all-failed, loop detection, deadline and
 * mode propagation.
 */
import { describe, expect, it } from 'vitest';
import { rpc } from '../support/http-client.js';
import { readEvents, stdioEngineCommand, tmpDir, waitForEvent, writeControl } from '../support/processes.js';
import { suiteProcesses } from '../support/suite.js';
import { schemaCrossCheck } from '../support/spec-validator.js';

interface Hit {
  id: string | number;
  score: number;
  meta: { engine: string; engineRank: number; engineScore: number; fusedScore: number };
}
interface RetrieveResult {
  hits: Hit[];
  usage?: { notes?: string[] };
  _meta: { engines: string[]; degraded?: Array<{ engine: string; code: number; reason: string }>; deadlineMs: number };
}

const procs = suiteProcesses();
const engine = procs.engine;
const gatewayWith = procs.gateway;

describe('fusion across engines', () => {
  it('returns k fused hits, scores descending, tagged with every engine', async () => {
    const a = await engine(['--id', 'a']);
    const b = await engine(['--id', 'b', '--id-prefix', 'b-']);
    const gw = await gatewayWith({
      engines: [
        { id: 'a', transport: 'http', url: a.url },
        { id: 'b', transport: 'http', url: b.url },
      ],
    });
    const res = await rpc<RetrieveResult>(gw.url, 'retrieve', { query: 'retrieval fusion ranking vector sparse', k: 6 });
    const { hits, _meta } = res.result!;
    expect(hits).toHaveLength(6);
    for (let i = 1; i < hits.length; i++) expect(hits[i - 1]!.score).toBeGreaterThanOrEqual(hits[i]!.score);
    expect(new Set(hits.map((h) => h.meta.engine))).toEqual(new Set(['a', 'b']));
    for (const hit of hits) {
      expect(hit.score).toBe(hit.meta.fusedScore);
      expect(hit.meta.engineRank).toBeGreaterThanOrEqual(1);
    }
    expect(_meta.engines.sort()).toEqual(['a', 'b']);
    expect(_meta.degraded).toBeUndefined();
    // Each engine was asked for fusion headroom (≥ k), with a strictly smaller deadline and the path.
    const request = readEvents(a.eventsFile).find((e) => e.ev === 'request' && e.method === 'retrieve');
    const params = request?.params as { k: number; _meta: { deadlineMs: number; federation: { depth: number; path: string[] } } };
    expect(params.k).toBeGreaterThanOrEqual(6);
    expect(params._meta.deadlineMs).toBeLessThan(_meta.deadlineMs);
    expect(params._meta.federation).toEqual({ depth: 2, path: ['rcp-gateway'] });
  });
});

describe('partial and total failure', () => {
  it('degrades to a success with notes when one engine fails, and -32010 when all do', async () => {
    const healthy = await engine(['--id', 'ok']);
    const control = `${tmpDir()}/control.json`;
    writeControl(control, { fault: 'ok' });
    const flaky = await engine(['--id', 'flaky', '--control', control]);
    const gw = await gatewayWith({
      engines: [
        { id: 'ok', transport: 'http', url: healthy.url },
        { id: 'flaky', transport: 'http', url: flaky.url },
        { id: 'local', transport: 'stdio', command: stdioEngineCommand(['--id', 'local']) },
      ],
    });
    writeControl(control, { fault: 'fail', failCode: -32603 });
    const degraded = await rpc<RetrieveResult>(gw.url, 'retrieve', { query: 'graph index query', k: 4 });
    expect(degraded.error).toBeUndefined();
    expect(degraded.result!._meta.degraded).toEqual([expect.objectContaining({ engine: 'flaky', code: -32603 })]);
    expect(degraded.result!.usage?.notes?.some((n) => n.includes('flaky'))).toBe(true);
    expect(degraded.result!.hits.every((h) => h.meta.engine !== 'flaky')).toBe(true);

    await healthy.stop();
    const stdioOnly = await rpc<RetrieveResult>(gw.url, 'retrieve', { query: 'graph index query', k: 4 });
    expect(stdioOnly.result!._meta.engines).toEqual(['local']);
    expect(stdioOnly.result!._meta.degraded?.map((d) => d.engine).sort()).toEqual(['flaky', 'ok']);

    writeControl(control, { fault: 'fail', failCode: -32010 });
    await rpc(gw.url, 'retrieve', { query: 'x', k: 1, _meta: { 'x-rcpgw': { engines: ['ok', 'flaky'] } } }).then((all) => {
      expect(all.error?.code).toBe(-32010);
      const listed = (all.error?.data as { engines: Array<{ engine: string }> }).engines.map((e) => e.engine).sort();
      expect(listed).toEqual(['flaky', 'ok']);
    });
  });

  it('fails the whole call with the code of a failing required engine', async () => {
    const healthy = await engine(['--id', 'ok']);
    const strictOne = await engine(['--id', 'must', '--fault', 'fail', '--fail-code', '-32011']);
    const gw = await gatewayWith({
      engines: [
        { id: 'ok', transport: 'http', url: healthy.url },
        { id: 'must', transport: 'http', url: strictOne.url, required: true },
      ],
    });
    const res = await rpc(gw.url, 'retrieve', { query: 'search', k: 3 });
    expect(res.error?.code).toBe(-32011);
    expect((res.error?.data as { engine: string }).engine).toBe('must');
  });
});

describe('loop detection and options (§16.2)', () => {
  it('never forwards at depth 0 and skips engines already on the path', async () => {
    const a = await engine(['--id', 'a']);
    const b = await engine(['--id', 'b']);
    const gw = await gatewayWith({
      engines: [
        { id: 'a', transport: 'http', url: a.url },
        { id: 'b', transport: 'http', url: b.url },
      ],
    });
    const before = readEvents(a.eventsFile).filter((e) => e.ev === 'request' && e.method === 'retrieve').length;
    const exhausted = await rpc(gw.url, 'retrieve', { query: 'search', k: 2, _meta: { federation: { depth: 0, path: ['upstream-agg'] } } });
    expect(exhausted.error?.code).toBe(-32010);
    expect(readEvents(a.eventsFile).filter((e) => e.ev === 'request' && e.method === 'retrieve').length).toBe(before);

    const cycle = await rpc<RetrieveResult>(gw.url, 'retrieve', {
      query: 'search',
      k: 2,
      _meta: { federation: { depth: 3, path: ['test-engine-a'] } },
    });
    expect(cycle.result!._meta.engines).toEqual(['b']);
    expect(cycle.result!.usage?.notes?.some((n) => n.includes('engine a skipped') && n.includes('cycle'))).toBe(true);
    const forwarded = await waitForEvent(
      b.eventsFile,
      (e) =>
        e.ev === 'request' && e.method === 'retrieve' && JSON.stringify((e.params as { _meta?: unknown })._meta).includes('test-engine-a'),
    );
    expect((forwarded.params as { _meta: { federation: unknown } })._meta.federation).toEqual({
      depth: 2,
      path: ['test-engine-a', 'rcp-gateway'],
    });
  });

  it('honours the client deadline and forwards a strictly smaller one', async () => {
    const a = await engine(['--id', 'a']);
    const gw = await gatewayWith({ engines: [{ id: 'a', transport: 'http', url: a.url }], gateway: { deadlineMs: 5000 } });
    const res = await rpc<RetrieveResult>(gw.url, 'retrieve', { query: 'stream cancel', k: 2, _meta: { deadlineMs: 1500 } });
    expect(res.result!._meta.deadlineMs).toBe(1500);
    const seen = await waitForEvent(a.eventsFile, (e) => e.ev === 'request' && e.method === 'retrieve');
    expect((seen.params as { _meta: { deadlineMs: number } })._meta.deadlineMs).toBeLessThan(1500);
  });

  it('skips engines lacking a strict mode, asks without it when strict is false, -32005 when none has it', async () => {
    const sparse = await engine(['--id', 'sparse']);
    const dense = await engine(['--id', 'dense', '--caps', JSON.stringify({ retrieve: { maxK: 50, modes: ['dense', 'sparse'] } })]);
    const gw = await gatewayWith({
      engines: [
        { id: 'sparse', transport: 'http', url: sparse.url },
        { id: 'dense', transport: 'http', url: dense.url },
      ],
    });
    const strict = await rpc<RetrieveResult>(gw.url, 'retrieve', { query: 'vector', k: 2, mode: 'dense' });
    expect(strict.result!._meta.engines).toEqual(['dense']);
    expect(strict.result!.usage?.notes?.some((n) => n.includes('engine sparse skipped'))).toBe(true);
    const lenient = await rpc<RetrieveResult>(gw.url, 'retrieve', { query: 'vector', k: 2, mode: 'dense', strict: false });
    expect(lenient.result!._meta.engines.sort()).toEqual(['dense', 'sparse']);
    const lenientRequest = await waitForEvent(sparse.eventsFile, (e) => e.ev === 'request' && e.method === 'retrieve');
    expect((lenientRequest.params as { mode?: string }).mode).toBeUndefined();
    const none = await rpc(gw.url, 'retrieve', { query: 'vector', k: 2, mode: 'hybrid' });
    expect(none.error).toMatchObject({ code: -32005, data: { option: 'mode' } });
  });
});

schemaCrossCheck();
