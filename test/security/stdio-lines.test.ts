/**
 * Line limits over stdio (§5.1, §4.7), through a real `rcp-gateway stdio` process: a line over
 * the body cap is answered -32013 and logged (the client never waits forever), and the same
 * `maxBodyBytes` as HTTP applies; the session keeps serving afterwards.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GATEWAY_CLI, tmpDir, writeConfig } from '../support/processes.js';
import { StdioClient } from '../support/stdio-client.js';
import { hostileEngine, type HostileEngine } from './support.js';

let engine: HostileEngine;
let client: StdioClient;

beforeAll(async () => {
  engine = await hostileEngine(() => ({ hits: [{ id: 'a', score: 1 }] }));
  const config = writeConfig(tmpDir('rcp-stdio-lines-'), {
    engines: [{ id: 'e0', transport: 'http', url: engine.url }],
    gateway: { maxBodyBytes: 10_000, logLevel: 'info' },
  });
  client = new StdioClient([process.execPath, GATEWAY_CLI, 'stdio', '--config', config]);
  const init = await client.request('initialize', { protocolVersion: 1 });
  expect(init.result).toBeDefined();
});

afterAll(async () => {
  expect(await client.close()).toBe(0);
  await engine.close();
});

describe('stdio lines over the body cap', () => {
  it('are answered -32013 (id null) and logged, and the session keeps serving', async () => {
    const line = JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'ping', params: { pad: 'x'.repeat(20_000) } });
    client.writeRaw(line + '\n');
    const answer = await client.waitFor((f) => f.id === null && typeof f.error === 'object', 5_000);
    expect(answer.error).toMatchObject({ code: -32013, data: { detail: expect.stringContaining('10000') } });
    await client.waitForStderr(/line exceeds|payload too large/i, 5_000);
    const ping = await client.request('ping', { nonce: 'after' });
    expect(ping.result).toEqual({ nonce: 'after' });
  });

  it('a line split across many writes is measured whole', async () => {
    const line = JSON.stringify({ jsonrpc: '2.0', id: 8, method: 'retrieve', params: { query: 'y'.repeat(12_000) } });
    for (let i = 0; i < line.length; i += 1_000) client.writeRaw(line.slice(i, i + 1_000));
    client.writeRaw('\n');
    const answers = client.messages.filter((m) => m.id === null).length;
    await client.waitFor((f) => f.id === null && client.messages.filter((m) => m.id === null).length > answers, 5_000);
    expect(engine.callsOf('retrieve')).toHaveLength(0);
    const ok = await client.request('retrieve', { query: 'short', k: 1 });
    expect(ok.result).toMatchObject({ hits: [{ id: 'a' }] });
  });
});
