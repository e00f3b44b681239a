/**
 * Catalog changes as MCP notifications over Streamable HTTP: a client opens a
 * `subscriptions/listen` stream and hears, as they happen, an engine added and removed by hot
 * reload (the gateway re-reads its config file, `gateway.watchConfig`), an engine's breaker
 * opening and recovering, and a stdio engine crashing and coming back; the stream ends with a
 * graceful close when the gateway shuts down.
 */
import type { Client, McpSubscription } from '@modelcontextprotocol/client';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  stdioEngineCommand,
  stopChild,
  tmpDir,
  writeConfig,
  writeControl,
  type EngineHandle,
  type GatewayHandle,
} from '../support/processes.js';
import { suiteProcesses } from '../support/suite.js';
import { connectHttp, is, NoteLog, structured, updated, type SearchOutput } from './helpers.js';

const procs = suiteProcesses();
const dir = tmpDir('rcp-mcp-catalog-');
const controls = { a: path.join(dir, 'a.json'), s: path.join(dir, 's.json') };
const RESET_MS = 800;

let a: EngineHandle;
let b: EngineHandle;
let gw: GatewayHandle;
let client: Client;
let notes: NoteLog;
let subscription: McpSubscription;

const gatewaySettings = {
  watchConfig: true,
  breaker: { volumeThreshold: 2, errorThresholdPercentage: 50, resetTimeoutMs: RESET_MS, maxResetTimeoutMs: RESET_MS },
  retry: { budgetRatio: 0, minPerWindow: 0, windowMs: 10_000 },
};

function config(engineIds: Array<'a' | 'b' | 's'>): Record<string, unknown> {
  const entries = {
    a: { id: 'a', transport: 'http', url: a.url },
    b: { id: 'b', transport: 'http', url: b.url },
    s: { id: 's', transport: 'stdio', command: stdioEngineCommand(['--id', 's', '--id-prefix', 's-', '--control', controls.s]) },
  };
  return { engines: engineIds.map((id) => entries[id]), gateway: gatewaySettings };
}

async function engineState(id: string): Promise<{ status: string; breaker: string }> {
  const read = await client.readResource({ uri: `rcpgw://engines/${id}` });
  const entry = JSON.parse((read.contents[0] as { text: string }).text) as { _meta: { status: string; breaker: string } };
  return entry._meta;
}

/** The engine ids `search` currently offers to choose from. */
async function searchIds(): Promise<string[]> {
  const tools = await client.listTools();
  const search = tools.tools.find((tool) => tool.name === 'search');
  const props = search?.inputSchema.properties as Record<string, { items?: { enum?: string[] } }> | undefined;
  return props?.engines?.items?.enum ?? [];
}

beforeAll(async () => {
  writeControl(controls.a, { fault: 'ok' });
  writeControl(controls.s, { fault: 'ok' });
  [a, b] = await Promise.all([procs.engine(['--id', 'a', '--control', controls.a]), procs.engine(['--id', 'b', '--id-prefix', 'b-'])]);
  gw = await procs.gateway(config(['a', 's']));
  client = await connectHttp(gw.url);
  notes = NoteLog.of(client);
});

afterAll(() => client?.close());

describe('subscriptions/listen over Streamable HTTP', () => {
  it('acknowledges the filter the gateway can honour', async () => {
    subscription = await client.listen({
      toolsListChanged: true,
      resourcesListChanged: true,
      resourceSubscriptions: ['rcpgw://catalog', 'rcpgw://engines/a', 'rcpgw://engines/s'],
    });
    expect(subscription.honoredFilter).toEqual({
      toolsListChanged: true,
      resourcesListChanged: true,
      resourceSubscriptions: ['rcpgw://catalog', 'rcpgw://engines/a', 'rcpgw://engines/s'],
    });
  });

  it('a hot reload that adds an engine: resources and tools list_changed, catalog updated, then b is searchable', async () => {
    expect(await searchIds()).toEqual(['a', 's']);
    const from = notes.mark;
    writeConfig(path.dirname(gw.configFile), config(['a', 's', 'b']));
    await Promise.all([
      notes.waitFor(is('resources/list_changed'), from),
      notes.waitFor(is('tools/list_changed'), from),
      notes.waitFor(updated('rcpgw://catalog'), from),
    ]);
    expect(await searchIds()).toEqual(['a', 's', 'b']);
    const { resources } = await client.listResources();
    expect(resources.map((resource) => resource.uri)).toContain('rcpgw://engines/b');
    const out = structured<SearchOutput>(
      await client.callTool({ name: 'search', arguments: { query: 'graph index', k: 4, engines: ['b'] } }),
    );
    expect(out.engines).toEqual(['b']);
  });

  it('a breaker opening and recovering: the engine resource is updated at each transition', async () => {
    writeControl(controls.a, { fault: 'fail', failCode: -32603 });
    const from = notes.mark;
    for (let i = 0; i < 2; i++) {
      const result = await client.callTool({ name: 'search', arguments: { query: 'graph index', k: 2, engines: ['a'] } });
      expect(result.isError).toBe(true);
    }
    const opened = await notes.waitFor(updated('rcpgw://engines/a'), from);
    expect(await engineState('a')).toMatchObject({ breaker: 'open' });
    writeControl(controls.a, { fault: 'ok' });
    // After the reset timeout the breaker lets a trial through (half-open): another update.
    const halfOpen = await notes.waitFor(updated('rcpgw://engines/a'), opened + 1);
    expect(await engineState('a')).toMatchObject({ breaker: 'half-open' });
    const trial = await client.callTool({ name: 'search', arguments: { query: 'graph index', k: 2, engines: ['a'] } });
    expect(trial.isError).toBeFalsy();
    await notes.waitFor(updated('rcpgw://engines/a'), halfOpen + 1);
    expect(await engineState('a')).toMatchObject({ breaker: 'closed', status: 'ready' });
    expect(notes.notes.slice(from).some(updated('rcpgw://catalog'))).toBe(true);
  });

  it('a stdio engine that crashes goes down and comes back: updates for both', async () => {
    writeControl(controls.s, { fault: 'crash' });
    const from = notes.mark;
    const result = await client.callTool({ name: 'search', arguments: { query: 'graph index', k: 2, engines: ['s'] } });
    expect(result.isError).toBe(true);
    writeControl(controls.s, { fault: 'ok' });
    const down = await notes.waitFor(updated('rcpgw://engines/s'), from);
    await notes.waitFor(updated('rcpgw://engines/s'), down + 1);
    expect(await engineState('s')).toMatchObject({ status: 'ready' });
    expect(gw.stderr()).toMatch(/engine process exited; restarting/);
    expect(notes.notes.slice(from).some(updated('rcpgw://catalog'))).toBe(true);
  });

  it('a hot reload that removes an engine: list_changed, and the engine leaves the tools and resources', async () => {
    const from = notes.mark;
    writeConfig(path.dirname(gw.configFile), config(['a', 's']));
    await Promise.all([notes.waitFor(is('resources/list_changed'), from), notes.waitFor(is('tools/list_changed'), from)]);
    expect(await searchIds()).toEqual(['a', 's']);
    const { resources } = await client.listResources();
    expect(resources.map((resource) => resource.uri)).not.toContain('rcpgw://engines/b');
  });

  it('ends the stream cleanly when the gateway shuts down', async () => {
    let closedBy: string | undefined;
    void subscription.closed.then((reason) => {
      closedBy = reason;
    });
    expect(await stopChild(gw.proc, 10_000)).toBe(0); // SIGTERM; a loaded machine may need more than the default grace
    expect(await subscription.closed).toBe('graceful'); // the final result arrived, not a dropped connection
    expect(closedBy).toBe('graceful');
  });
});
