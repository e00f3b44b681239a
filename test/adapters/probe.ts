/**
 * An L0 conformance probe (§14.1) for any RCP server over stdio, as the gateway's own
 * conformance suite probes the gateway: lifecycle, id echo, error codes, params validation,
 * clamping, notifications, batches, parse errors, shutdown. Registers its tests in the caller's
 * describe block; the server must match the word "wing".
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { StdioClient } from '../support/stdio-client.js';

export function probeL0(start: () => StdioClient, expected: { maxK: number }): void {
  let client: StdioClient;
  beforeAll(() => {
    client = start();
  });
  afterAll(async () => {
    expect(await client.close()).toBe(0);
    expect(client.violations).toEqual([]);
  });

  it('answers info and ping before initialize, echoing the nonce with its type', async () => {
    const info = await client.request('info', {});
    expect(info.result).toMatchObject({ protocolVersion: 1, capabilities: { retrieve: { maxK: expected.maxK } } });
    expect((await client.request('ping', { nonce: 'n-1' })).result).toEqual({ nonce: 'n-1' });
    expect((await client.request('ping', { nonce: 42 })).result).toEqual({ nonce: 42 });
  }, 30_000);

  it('rejects gated methods with -32001 before initialize, and keeps the lock after a failed one (-32002)', async () => {
    expect((await client.request('retrieve', { query: 'wing', k: 3 })).error?.code).toBe(-32001);
    expect((await client.request('initialize', { protocolVersion: 0 })).error?.code).toBe(-32002);
    expect((await client.request('retrieve', { query: 'wing', k: 3 })).error?.code).toBe(-32001);
  });

  it('negotiates min(client, server), declares its level, and rejects a second initialize (-32600)', async () => {
    const ok = await client.request('initialize', { protocolVersion: 7, client: { name: 'probe' }, capabilities: {} });
    expect(ok.result).toMatchObject({ protocolVersion: 1, _meta: { conformance: 'L0' } });
    expect((await client.request('initialize', { protocolVersion: 1 })).error?.code).toBe(-32600);
    const info = await client.request('info', {});
    expect((info.result as { capabilities: unknown }).capabilities).toEqual((ok.result as { capabilities: unknown }).capabilities);
  });

  it('echoes ids unchanged, including 0 and ""', async () => {
    for (const id of [0, '', 'abc', 17, -3]) expect((await client.request('ping', {}, id)).id).toStrictEqual(id);
  });

  it('prefers -32004 for undefined methods over -32003 for unadvertised ones', async () => {
    expect((await client.request('frobnicate', {})).error?.code).toBe(-32004);
    expect((await client.request('embed', { inputs: ['x'] })).error?.code).toBe(-32003);
    expect((await client.request('index/add', { documents: [] })).error?.code).toBe(-32003);
  });

  it('validates params with -32602 naming the field', async () => {
    expect((await client.request('retrieve', { k: 3 })).error).toMatchObject({ code: -32602, data: { field: 'query' } });
    expect((await client.request('retrieve', { query: 'x', k: 2.5 })).error).toMatchObject({ code: -32602, data: { field: 'k' } });
    expect((await client.request('retrieve', { query: 'x', k: -1 })).error).toMatchObject({ code: -32602, data: { field: 'k' } });
    expect((await client.request('retrieve', { query: [{ type: 'image', uri: 'x' }] })).error).toMatchObject({
      code: -32602,
      data: { field: 'query' },
    });
  });

  it('clamps k to maxK instead of failing (§12), treating null as absent (§4.6)', async () => {
    const res = await client.request<{ hits: unknown[] }>('retrieve', {
      query: 'wing',
      k: 5_000,
      mode: null,
      cursor: null,
      extra: { unknown: true },
    });
    expect(res.error).toBeUndefined();
    expect(res.result!.hits.length).toBeGreaterThan(0);
    expect(res.result!.hits.length).toBeLessThanOrEqual(expected.maxK);
  });

  it('ignores notifications, including cancels for unknown ids', async () => {
    client.notify('notifications/unknown', {});
    client.notify('notifications/cancel', { id: 'never-sent' });
    expect((await client.request('ping', { nonce: 'after' })).result).toEqual({ nonce: 'after' });
  });

  it('handles batches per §11 and parse errors with -32700', async () => {
    const before = client.frames.length;
    client.writeRaw(`${JSON.stringify([{ jsonrpc: '2.0', id: 'b1', method: 'ping', params: { nonce: 1 } }, 5])}\n`);
    await client.waitFor((f) => f.id === 'b1');
    const batch = client.frames.slice(before).find((f) => Array.isArray(f)) as Array<{
      id: unknown;
      error?: { code: number };
      result?: unknown;
    }>;
    expect(batch).toHaveLength(2);
    expect(batch.find((r) => r.id === null)?.error?.code).toBe(-32600);
    client.writeRaw('{not json\n');
    await client.waitFor((f) => (f as { error?: { code: number } }).error?.code === -32700);
    expect((await client.request('ping', {})).result).toEqual({});
  });

  it('retrieves with citations, then answers shutdown', async () => {
    const res = await client.request<{ hits: Array<{ id: string; citation: { source: string } }> }>('retrieve', {
      query: 'delta wing',
      k: 2,
    });
    expect(res.result!.hits[0]!.id).toBe('d3');
    expect(res.result!.hits[0]!.citation.source).toMatch(/:d3$/);
    expect((await client.request('shutdown', {})).result).toEqual({});
  });
}
