/**
 * `rcp-gateway mcp-stdio`: the official MCP client spawns the gateway and speaks MCP over its
 * stdin/stdout, in front of two HTTP test engines. A fused search with progress, a client cancel
 * (`notifications/cancelled`) that disconnects the live HTTP legs, catalog changes on a
 * 2026-07-28 listen stream and as 2025-era notifications (list changes unsolicited, resource
 * updates only after `resources/subscribe`), and a clean exit when the client closes stdin.
 */
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tmpDir, waitForEvent, writeConfig, writeControl, type EngineHandle } from '../support/processes.js';
import { suiteProcesses } from '../support/suite.js';
import { logLines, until } from '../observability/support.js';
import {
  connectStdio,
  is,
  NoteLog,
  structured,
  updated,
  type SearchOutput,
  type StdioConnection,
  type ToolErrorOutput,
} from './helpers.js';

const procs = suiteProcesses();
const dir = tmpDir('rcp-mcp-stdio-');
const controls = { a: path.join(dir, 'a.json'), b: path.join(dir, 'b.json') };
let a: EngineHandle;
let b: EngineHandle;
let configFile: string;

function behave(overrides: Partial<Record<'a' | 'b', Record<string, unknown>>> = {}): void {
  // A gap between an engine's progress frames: the MCP client handles notifications a microtask
  // after it reads them but a response at once, so progress read in one chunk with the result
  // would be dropped by the client (its handler is gone), whatever order the gateway wrote them in.
  for (const id of ['a', 'b'] as const)
    writeControl(controls[id], { fault: 'ok', progressFrames: 2, progressIntervalMs: 25, ...overrides[id] });
}

function config(engineIds: Array<'a' | 'b'>): Record<string, unknown> {
  const entries = { a: { id: 'a', transport: 'http', url: a.url }, b: { id: 'b', transport: 'http', url: b.url } };
  return { engines: engineIds.map((id) => entries[id]), gateway: { watchConfig: true, progressFramesPerSecond: 1000 } };
}

beforeAll(async () => {
  behave();
  [a, b] = await Promise.all([
    procs.engine(['--id', 'a', '--control', controls.a]),
    procs.engine(['--id', 'b', '--id-prefix', 'b-', '--control', controls.b]),
  ]);
  configFile = writeConfig(dir, config(['a', 'b']));
});

afterAll(() => behave());

describe('MCP over stdio (2026-07-28)', () => {
  let conn: StdioConnection;
  beforeAll(async () => {
    conn = await connectStdio(configFile);
  });

  it('searches the federation: hits from both engines, progress in order', async () => {
    expect(conn.client.getProtocolEra()).toBe('modern');
    const { tools } = await conn.client.listTools();
    expect(tools.map((tool) => tool.name).sort()).toEqual(['list_engines', 'search']);
    const progress: number[] = [];
    const result = await conn.client.callTool(
      { name: 'search', arguments: { query: 'graph index', k: 4 } },
      { onprogress: (p) => progress.push(p.progress) },
    );
    const out = structured<SearchOutput>(result);
    expect(out.engines.sort()).toEqual(['a', 'b']);
    expect(new Set(out.hits.map((hit) => hit.meta?.engine))).toEqual(new Set(['a', 'b']));
    // The engines' first frames come 25 ms before their answers, so the client reads them on their
    // own; the gateway's last frames (legs done, 1.0) are written just before the result and a
    // loaded client may read them in the result's chunk and drop them (see behave()), so this
    // asserts what the client is sure to see: frames in order, within (0, 1].
    expect(progress.length).toBeGreaterThanOrEqual(1);
    for (let i = 1; i < progress.length; i++) expect(progress[i]).toBeGreaterThan(progress[i - 1]!);
    for (const value of progress) expect(value > 0 && value <= 1).toBe(true);
    const bad = await conn.client.callTool({ name: 'search', arguments: { query: 'graph', k: 'ten' } });
    expect(structured<ToolErrorOutput>(bad).error).toMatchObject({ code: -32602, data: { field: 'k' } });
  });

  it('a cancel from the client disconnects the live engine legs', async () => {
    behave({ a: { fault: 'hang' }, b: { fault: 'hang' } });
    const query = 'retrieval cancel over mcp stdio';
    const controller = new AbortController();
    const pending = conn.client.callTool({ name: 'search', arguments: { query, k: 2 } }, { signal: controller.signal });
    const isRequest = (e: { ev: string; method?: string; params?: Record<string, unknown> }): boolean =>
      e.ev === 'request' && e.method === 'retrieve' && e.params?.query === query;
    const [ra, rb] = await Promise.all([waitForEvent(a.eventsFile, isRequest), waitForEvent(b.eventsFile, isRequest)]);
    controller.abort('stop');
    await expect(pending).rejects.toThrow();
    await waitForEvent(a.eventsFile, (e) => e.ev === 'abort' && e.id === ra.id);
    await waitForEvent(b.eventsFile, (e) => e.ev === 'abort' && e.id === rb.id);
    behave();
    // The gateway saw an RCP cancel (not a deadline or a disconnect) and answered the call once.
    const cancelled = await until('the request line of the cancelled call', () =>
      logLines(conn.stderr()).find((l) => l.msg === 'request' && l.abort === 'cancel'),
    );
    expect(cancelled).toMatchObject({ method: 'retrieve', transport: 'stdio', code: -32006 });
    expect(logLines(conn.stderr()).filter((l) => l.msg === 'request' && l.abort === 'cancel')).toHaveLength(1);
  });

  it('hears a catalog change on its listen stream, which ends with its final result on SIGTERM', async () => {
    const notes = NoteLog.of(conn.client);
    const subscription = await conn.client.listen({
      toolsListChanged: true,
      resourcesListChanged: true,
      resourceSubscriptions: ['rcpgw://catalog'],
    });
    expect(subscription.honoredFilter).toMatchObject({ toolsListChanged: true, resourceSubscriptions: ['rcpgw://catalog'] });
    writeConfig(dir, config(['a']));
    await Promise.all([
      notes.waitFor(is('resources/list_changed')),
      notes.waitFor(is('tools/list_changed')),
      notes.waitFor(updated('rcpgw://catalog')),
    ]);
    const { tools } = await conn.client.listTools();
    const search = tools.find((tool) => tool.name === 'search')!;
    expect((search.inputSchema.properties as Record<string, unknown>).engines).toBeUndefined(); // one engine left: nothing to choose
    const gone = new Promise<void>((resolve) => {
      conn.client.onclose = () => resolve();
    });
    process.kill(conn.transport.pid!, 'SIGTERM');
    expect(await subscription.closed).toBe('graceful'); // the final result arrived, not a dropped pipe
    await gone;
    expect(logLines(conn.stderr()).find((l) => l.msg === 'shutting down')).toMatchObject({ trigger: 'SIGTERM' });
  });
});

describe('MCP over stdio (2025-era client)', () => {
  it('initializes, searches, gets list changes unsolicited and resource updates once subscribed; exits when stdin closes', async () => {
    writeConfig(dir, config(['a', 'b']));
    const conn = await connectStdio(configFile, 'legacy');
    expect(conn.client.getProtocolEra()).toBe('legacy');
    const notes = NoteLog.of(conn.client);
    const out = structured<SearchOutput>(await conn.client.callTool({ name: 'search', arguments: { query: 'graph index', k: 4 } }));
    expect(new Set(out.hits.map((hit) => hit.meta?.engine)).size).toBe(2);
    await conn.client.subscribeResource({ uri: 'rcpgw://catalog' });
    writeConfig(dir, config(['b']));
    await Promise.all([
      notes.waitFor(is('tools/list_changed')),
      notes.waitFor(is('resources/list_changed')),
      notes.waitFor(updated('rcpgw://catalog')),
    ]);
    // Never subscribed to the engines' own resources: no updates for them.
    expect(notes.notes.filter((note) => note.uri?.startsWith('rcpgw://engines/'))).toEqual([]);
    const engines = structured<{ engines: Array<{ id: string }> }>(
      await conn.client.callTool({ name: 'list_engines', arguments: {} }),
    ).engines;
    expect(engines.map((engine) => engine.id)).toEqual(['b']);
    const pid = conn.transport.pid!;
    await conn.client.close();
    expect(() => process.kill(pid, 0)).toThrow(); // the gateway is gone
    expect(logLines(conn.stderr()).find((l) => l.msg === 'shutting down')).toMatchObject({ trigger: 'stdin closed' });
  });
});
