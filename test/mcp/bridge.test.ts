/**
 * The bridge from MCP into the RCP session, and the RCP catalog watch, without processes: an
 * aborted MCP signal is an RCP cancel, the deadline and the §13 gates apply, progress is passed
 * on without the internal token; `x-rcpgw/catalog/watch` advertises itself, streams the state
 * then each change, and answers at shutdown.
 */
import { describe, expect, it } from 'vitest';
import { ErrorCode, RcpError } from '../../src/core/protocol/errors.js';
import type { JsonObject } from '../../src/core/protocol/jsonrpc.js';
import type { CallContext, ProgressUpdate, RcpService } from '../../src/core/service/contract.js';
import { RcpBridge } from '../../src/mcp/bridge.js';
import { CatalogWatchService } from '../../src/mcp/catalog/rcp-watch.js';
import { snapshotOf, type CatalogSnapshot } from '../../src/mcp/catalog/snapshot.js';
import { CatalogWatch } from '../../src/mcp/catalog/watch.js';

function engine(id: string, status = 'ready', breaker = 'closed'): JsonObject {
  return { id, server: { name: id }, capabilities: { retrieve: {} }, _meta: { status, breaker } };
}

function snapshot(engines: JsonObject[]): CatalogSnapshot {
  return snapshotOf({ engines }, { retrieve: { maxK: 100 } });
}

describe('RcpBridge', () => {
  /** A service whose calls report half progress, then wait for their signal. */
  function service(seen: CallContext[]): RcpService {
    return {
      describe: () => ({ protocolVersion: 1, server: { name: 'fake' }, capabilities: { retrieve: {} } }),
      defaultDeadlineMs: 100,
      call: (_method, _params, ctx) => {
        seen.push(ctx);
        ctx.progress?.({ progress: 0.5, stage: 'recall', message: 'half' });
        return new Promise<JsonObject>((_resolve, reject) => {
          ctx.signal.addEventListener('abort', () =>
            reject(new RcpError(ctx.signal.reason === 'deadline' ? ErrorCode.Timeout : ErrorCode.Cancelled)),
          );
        });
      },
    };
  }

  it('an aborted MCP signal is an RCP cancel: -32006, the context aborted with reason cancel', async () => {
    const seen: CallContext[] = [];
    const bridge = new RcpBridge({ service: service(seen), transport: 'stdio' });
    const controller = new AbortController();
    const progress: ProgressUpdate[] = [];
    const pending = bridge.call({
      method: 'retrieve',
      params: { query: 'q' },
      requestId: 'mcp:1',
      signal: controller.signal,
      onProgress: (u) => progress.push(u),
    });
    expect(bridge.inFlight).toBe(1);
    controller.abort();
    expect(await pending).toEqual({ ok: false, error: { code: -32006, message: 'cancelled' } });
    expect(seen[0]!.signal.reason).toBe('cancel');
    expect(seen[0]).toMatchObject({ method: 'retrieve', requestId: 'mcp:1', transport: 'stdio', deadlineMs: 100 });
    expect(progress).toEqual([{ progress: 0.5, stage: 'recall', message: 'half' }]); // the internal token is not passed on
    expect(await bridge.idle(1_000)).toBe(true);
  });

  it('the deadline applies, the progress token is only set when asked, and gated methods are checked', async () => {
    const seen: CallContext[] = [];
    const bridge = new RcpBridge({ service: service(seen), transport: 'http' });
    const timedOut = await bridge.call({ method: 'retrieve', params: { query: 'q' }, requestId: 'mcp:2' });
    expect(timedOut).toMatchObject({ ok: false, error: { code: -32014 } });
    expect(seen[0]!.signal.reason).toBe('deadline');
    expect(seen[0]!.progress).toBeUndefined();
    expect(await bridge.call({ method: 'rerank', params: {}, requestId: 'mcp:3' })).toMatchObject({ ok: false, error: { code: -32003 } });
    expect(await bridge.call({ method: 'no/such', params: {}, requestId: 'mcp:4' })).toMatchObject({ ok: false, error: { code: -32004 } });
  });
});

describe('x-rcpgw/catalog/watch', () => {
  it('advertises itself, streams the state then each change, and answers at shutdown', async () => {
    let current = snapshot([engine('a')]);
    const watch = new CatalogWatch(() => Promise.resolve(current));
    await watch.start();
    const described = { protocolVersion: 1, server: { name: 'gw' }, capabilities: { retrieve: {}, 'x-rcpgw': { other: {} } } };
    const inner: RcpService = { describe: () => described, call: () => Promise.resolve({ inner: true }), defaultDeadlineMs: 1_000 };
    const service = new CatalogWatchService(inner, watch);
    expect(service.describe().capabilities['x-rcpgw']).toEqual({ other: {}, catalogWatch: {} });
    expect(service.describe()).toBe(service.describe()); // not rebuilt per request
    const bridge = new RcpBridge({ service, transport: 'http' });
    expect(await bridge.call({ method: 'retrieve', params: { query: 'q' }, requestId: 1 })).toEqual({ ok: true, result: { inner: true } });
    expect(await bridge.call({ method: 'x-rcpgw/catalog/watch', params: {}, requestId: 2 })).toMatchObject({
      ok: false,
      error: { code: -32602, data: { field: '_meta.progressToken' } },
    });

    const frames: ProgressUpdate[] = [];
    let changed!: () => void;
    const secondFrame = new Promise<void>((resolve) => {
      changed = resolve;
    });
    const pending = bridge.call({
      method: 'x-rcpgw/catalog/watch',
      params: {},
      requestId: 3,
      onProgress: (u) => {
        frames.push(u);
        if (frames.length === 2) changed();
      },
    });
    current = snapshot([engine('a', 'ready', 'open')]);
    watch.poke();
    await secondFrame;
    service.close();
    expect(await pending).toEqual({ ok: true, result: { ended: 'shutdown', revision: 1 } });
    expect(frames).toEqual([
      {
        stage: 'catalog',
        message: 'watching 1 engine',
        partial: { revision: 0, engines: [{ id: 'a', status: 'ready', breaker: 'closed' }] },
      },
      {
        stage: 'catalog',
        message: 'engine a: breaker closed → open',
        partial: {
          revision: 1,
          events: [{ kind: 'engine-breaker', engine: 'a', from: 'closed', to: 'open' }],
          engines: [{ id: 'a', status: 'ready', breaker: 'open' }],
        },
      },
    ]);
    expect(await bridge.call({ method: 'x-rcpgw/catalog/watch', params: {}, requestId: 4, onProgress: () => undefined })).toMatchObject({
      ok: false,
      error: { code: -32010 },
    });
  });
});
