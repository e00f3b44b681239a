/**
 * `rcp-gateway mcp-stdio` on the wire, driven line by line (no MCP client in between): what a
 * hostile or broken client writes is answered, never dropped (JSON-RPC 2.0 §5.1); a line past
 * `gateway.maxBodyBytes` is answered -32013 and the connection carries on; and once the host is
 * gone (its end of stdout closed) the gateway stops its engines and exits instead of serving
 * nobody for ever.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { afterEach, describe, expect, it } from 'vitest';
import { GATEWAY_CLI, REPO_ROOT, stdioEngineCommand, tmpDir, waitForEvent, writeConfig } from '../support/processes.js';

const MAX_BODY_BYTES = 4096;
const running: ChildProcessWithoutNullStreams[] = [];
afterEach(() => {
  for (const proc of running.splice(0)) if (proc.exitCode === null) proc.kill('SIGKILL');
});

function start(
  engineArgs: string[] = [],
  gateway: Record<string, unknown> = {},
): { proc: ChildProcessWithoutNullStreams; next: () => Promise<Record<string, unknown>> } {
  const config = writeConfig(tmpDir('rcp-mcp-wire-'), {
    engines: [{ id: 'one', transport: 'stdio', command: stdioEngineCommand(['--id', 'one', ...engineArgs]) }],
    gateway: { maxBodyBytes: MAX_BODY_BYTES, logLevel: 'warn', ...gateway },
  });
  const proc = spawn(process.execPath, [GATEWAY_CLI, 'mcp-stdio', '--config', config], { cwd: REPO_ROOT, stdio: ['pipe', 'pipe', 'pipe'] });
  running.push(proc);
  proc.stderr.resume();
  const lines = createInterface({ input: proc.stdout })[Symbol.asyncIterator]();
  const next = async (): Promise<Record<string, unknown>> => {
    const { value, done } = await lines.next();
    if (done) throw new Error('mcp-stdio closed its output');
    return JSON.parse(value as string) as Record<string, unknown>;
  };
  return { proc, next };
}

const send = (proc: ChildProcessWithoutNullStreams, line: string): void => void proc.stdin.write(`${line}\n`);
const ping = (id: string): string => JSON.stringify({ jsonrpc: '2.0', id, method: 'ping' });

describe('mcp-stdio on the wire', () => {
  it('answers every malformed message, with its id when usable, and keeps serving', async () => {
    const { proc, next } = start();
    const cases: Array<[string, string | null, number]> = [
      ['{not json', null, -32700],
      [JSON.stringify({ jsonrpc: '2.0', id: 'pa', method: 'ping', params: [1] }), 'pa', -32600],
      [JSON.stringify({ jsonrpc: '1.0', id: 'v1', method: 'ping' }), 'v1', -32600],
      [JSON.stringify({ jsonrpc: '2.0', id: 'mn', method: 5 }), 'mn', -32600],
      [JSON.stringify({ jsonrpc: '2.0', id: 'pt', method: 'ping', params: { _meta: { progressToken: {} } } }), 'pt', -32600],
      [JSON.stringify({ jsonrpc: '2.0', id: 1.5, method: 'ping' }), null, -32600],
      [JSON.stringify([{ jsonrpc: '2.0', id: 'b', method: 'ping' }]), null, -32600],
      ['42', null, -32600],
    ];
    for (const [line, id, code] of cases) {
      send(proc, line);
      const reply = await next();
      expect(reply).toMatchObject({ jsonrpc: '2.0', id, error: { code } });
    }
    send(proc, ping('after'));
    expect(await next()).toMatchObject({ id: 'after', result: {} });
  }, 30_000);

  it('answers a line past maxBodyBytes with -32013 and serves the next one', async () => {
    const { proc, next } = start();
    send(proc, ping('before'));
    expect(await next()).toMatchObject({ id: 'before', result: {} });
    const query = 'x'.repeat(MAX_BODY_BYTES * 3);
    send(proc, JSON.stringify({ jsonrpc: '2.0', id: 'big', method: 'tools/call', params: { name: 'search', arguments: { query } } }));
    expect(await next()).toMatchObject({ id: null, error: { code: -32013 } });
    send(proc, ping('after'));
    expect(await next()).toMatchObject({ id: 'after', result: {} });
  }, 30_000);

  it('refuses what it cannot honour instead of dropping it: an unadvertised filter, a foreign subscription, a malformed URI', async () => {
    const { proc, next } = start();
    const request = async (id: string, method: string, params: Record<string, unknown>): Promise<Record<string, unknown>> => {
      send(proc, JSON.stringify({ jsonrpc: '2.0', id, method, params }));
      return next();
    };
    await request('init', 'initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'wire', version: '1' } });
    send(proc, JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }));
    // No engine here filters: the gateway does not advertise `filter`, so the argument is refused (§7.7), not ignored.
    const filtered = await request('f', 'tools/call', {
      name: 'search',
      arguments: { query: 'heat', filter: { field: 'x', op: 'eq', value: 1 } },
    });
    expect(filtered).toMatchObject({ id: 'f', result: { isError: true } });
    expect(JSON.stringify(filtered)).toContain('-32005');
    expect(await request('s', 'resources/subscribe', { uri: 'file:///etc/passwd' })).toMatchObject({ id: 's', error: { code: -32602 } });
    expect(await request('r', 'resources/read', { uri: 'rcpgw://engines/%E0%A4%A' })).toMatchObject({ id: 'r', error: { code: -32602 } });
  }, 30_000);

  it('answers a tool call still running at the drain timeout with -32010 before it exits on SIGTERM', async () => {
    const events = path.join(tmpDir('rcp-mcp-wire-'), 'events.ndjson');
    const { proc, next } = start(['--fault', 'hang', '--events', events], { drainTimeoutMs: 500 });
    send(
      proc,
      JSON.stringify({
        jsonrpc: '2.0',
        id: 'init',
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'wire', version: '1' } },
      }),
    );
    expect(await next()).toMatchObject({ id: 'init' });
    send(proc, JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }));
    send(
      proc,
      JSON.stringify({ jsonrpc: '2.0', id: 'hung', method: 'tools/call', params: { name: 'search', arguments: { query: 'heat' } } }),
    );
    await waitForEvent(events, (e) => e.ev === 'request' && e.method === 'retrieve');
    const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
    proc.kill('SIGTERM');
    const answer = await next();
    expect(answer).toMatchObject({ id: 'hung', result: { isError: true } });
    expect(JSON.stringify(answer)).toContain('-32010');
    expect(await exited).toBe(0);
  }, 30_000);

  it('exits once its host is gone (stdout closed), stdin still open', async () => {
    const { proc, next } = start();
    send(proc, ping('first'));
    expect(await next()).toMatchObject({ id: 'first', result: {} });
    const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
    proc.stdout.destroy(); // the host's end of the pipe: the gateway's next write fails (EPIPE)
    send(proc, ping('into the void'));
    expect(await exited).toBe(0);
  }, 30_000);
});
