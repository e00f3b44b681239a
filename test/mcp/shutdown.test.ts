/**
 * Shutdown with an MCP tool call still running (Streamable HTTP, 2026-07-28 client): at the drain
 * timeout the call is answered -32010 like an RCP call (docs/mcp.md), not cut off by the MCP
 * handler's close with an empty HTTP 499, and the process exits 0.
 */
import { describe, expect, it } from 'vitest';
import { stopChild, waitForEvent } from '../support/processes.js';
import { suiteProcesses } from '../support/suite.js';
import { connectHttp, textOf } from './helpers.js';

const procs = suiteProcesses();

describe('MCP over HTTP at shutdown', () => {
  it('answers a tool call still running at the drain timeout with -32010', async () => {
    const engine = await procs.engine(['--id', 'hung', '--fault', 'hang']);
    const gw = await procs.gateway({
      engines: [{ id: 'hung', transport: 'http', url: engine.url }],
      gateway: { drainTimeoutMs: 800, deadlineMs: 30_000, engineTimeoutMs: 30_000 },
    });
    const client = await connectHttp(gw.url);
    const call = client.callTool({ name: 'search', arguments: { query: 'boundary layer' } });
    await waitForEvent(engine.eventsFile, (e) => e.ev === 'request' && e.method === 'retrieve');
    const exited = stopChild(gw.proc, 15_000); // SIGTERM
    const result = await call;
    expect(result.isError).toBe(true);
    expect(textOf(result as Parameters<typeof textOf>[0])).toContain('-32010');
    expect(await exited).toBe(0);
    await client.close().catch(() => undefined);
  }, 40_000);
});
