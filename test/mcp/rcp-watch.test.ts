/**
 * The catalog changes on the RCP side: `x-rcpgw/catalog/watch` over HTTP SSE, for dashboards.
 * Its first progress frame carries the engine states, each hot reload or state change a frame
 * with the events, and the call answers `ended: "deadline"` at its deadline and
 * `ended: "shutdown"` (its stream ending cleanly) when the gateway stops. Every frame is checked
 * against the RCP schema.
 */
import { describe, expect, it } from 'vitest';
import { rpc, rpcSse, type SseReply } from '../support/http-client.js';
import { stopChild, tmpDir, writeConfig, type EngineHandle } from '../support/processes.js';
import { suiteProcesses } from '../support/suite.js';

const procs = suiteProcesses();

interface WatchFrame {
  progressToken: string;
  stage?: string;
  message?: string;
  partial?: {
    revision: number;
    engines: Array<{ id: string; status: string; breaker: string }>;
    events?: Array<{ kind: string; engine?: string }>;
  };
}

/** An open watch: its progress frames as they arrive, and the whole reply once the stream ends. */
function openWatch(
  url: string,
  meta: Record<string, unknown> = {},
): { frames: WatchFrame[]; frame: (n: number) => Promise<WatchFrame>; reply: Promise<SseReply> } {
  const frames: WatchFrame[] = [];
  const waiters: Array<{ n: number; resolve: (frame: WatchFrame) => void }> = [];
  const reply = rpcSse(
    url,
    'x-rcpgw/catalog/watch',
    { _meta: { progressToken: 'watch', ...meta } },
    {
      onFrame: (frame) => {
        const record = frame as { method?: string; params?: WatchFrame };
        if (record.method !== 'notifications/progress' || !record.params) return;
        frames.push(record.params);
        for (const waiter of waiters.filter((w) => w.n < frames.length)) waiter.resolve(frames[waiter.n]!);
      },
    },
  );
  const frame = (n: number): Promise<WatchFrame> =>
    n < frames.length ? Promise.resolve(frames[n]!) : new Promise((resolve) => waiters.push({ n, resolve }));
  return { frames, frame, reply };
}

describe('x-rcpgw/catalog/watch (RCP, SSE)', () => {
  it('streams the engine states, then each change, ends at its deadline, and ends cleanly at shutdown', async () => {
    const dir = tmpDir('rcp-mcp-watch-');
    const [a, b]: EngineHandle[] = await Promise.all([procs.engine(['--id', 'a']), procs.engine(['--id', 'b', '--id-prefix', 'b-'])]);
    const config = (engines: EngineHandle[]): Record<string, unknown> => ({
      engines: engines.map((engine) => ({ id: engine === a ? 'a' : 'b', transport: 'http', url: engine.url })),
      gateway: { watchConfig: true, deadlineMs: 60_000 },
    });
    const gw = await procs.gateway(config([a]), { configFile: writeConfig(dir, config([a])) });

    const info = await rpc(gw.url, 'info');
    expect((info.result as { capabilities: Record<string, unknown> }).capabilities['x-rcpgw']).toEqual({ catalogWatch: {} });
    const untokened = await rpc(gw.url, 'x-rcpgw/catalog/watch', {});
    expect(untokened.error).toMatchObject({ code: -32602, data: { field: '_meta.progressToken' } });

    // A short watch ends at its deadline with a normal answer.
    const short = openWatch(gw.url, { deadlineMs: 300 });
    const shortReply = await short.reply;
    expect(shortReply.final?.result).toEqual({ ended: 'deadline', revision: 0 });
    expect(short.frames[0]).toMatchObject({
      stage: 'catalog',
      message: 'watching 1 engine',
      partial: { revision: 0, engines: [{ id: 'a', status: 'ready', breaker: 'closed' }] },
    });

    const watch = openWatch(gw.url);
    await watch.frame(0);
    writeConfig(dir, config([a, b]));
    const added = await watch.frame(1);
    expect(added.partial?.revision).toBe(1);
    expect(added.partial?.events).toContainEqual({ kind: 'engine-added', engine: 'b', status: 'ready', breaker: 'closed' });
    expect(added.partial?.engines.map((engine) => engine.id)).toEqual(['a', 'b']);
    expect(added.message).toMatch(/engine b added \(ready\)/);

    expect(await stopChild(gw.proc, 10_000)).toBe(0); // SIGTERM; a loaded machine may need more than the default grace
    const reply = await watch.reply;
    expect(reply.aborted).toBe(false);
    expect(reply.final?.result).toMatchObject({ ended: 'shutdown' });
    expect(reply.framesAfterFinal).toBe(0);
    expect(reply.parseErrors).toEqual([]);
  });
});
