/**
 * The federation as an MCP server over Streamable HTTP (`/mcp` on the gateway's listener), driven
 * by the official MCP client against real engine processes: two HTTP test engines (one also
 * reranks) and a stdio one. Tool listing and schemas, a fused search with per-hit lineage and the
 * untrusted-data fence, progress in order, a cancel that reaches every live leg (HTTP legs by
 * disconnect, the stdio leg by `notifications/cancel`), errors as tool errors with the RCP code,
 * degraded answers, rerank routing, the catalog, and a 2025-era client on the same endpoint.
 */
import type { Client } from '@modelcontextprotocol/client';
import { connect } from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  stdioEngineCommand,
  tmpDir,
  waitForEvent,
  writeControl,
  type EngineEvent,
  type EngineHandle,
  type GatewayHandle,
} from '../support/processes.js';
import { suiteProcesses } from '../support/suite.js';
import { logLines, until } from '../observability/support.js';
import { connectHttp, structured, textOf, type SearchOutput, type ToolErrorOutput } from './helpers.js';
import { LISTEN_STREAMS_PER_CLIENT } from '../../src/mcp/listen-streams.js';

const procs = suiteProcesses();
const dir = tmpDir('rcp-mcp-http-');
const controls = { a: path.join(dir, 'a.json'), b: path.join(dir, 'b.json'), s: path.join(dir, 's.json') };
const sEvents = path.join(dir, 's-events.ndjson');
const B_CAPS = JSON.stringify({
  retrieve: { maxK: 50, modes: ['sparse'], scoreFloor: 0 },
  streaming: {},
  rerank: { methods: ['cross-encoder'], maxCandidates: 8 },
});

let a: EngineHandle;
let b: EngineHandle;
let gw: GatewayHandle;
let client: Client;

function behave(overrides: Partial<Record<'a' | 'b' | 's', Record<string, unknown>>> = {}): void {
  // A gap between an engine's progress frames: the MCP client handles notifications a microtask
  // after it reads them but a response at once, so progress read in one chunk with the result
  // would be dropped by the client (its handler is gone), whatever order the gateway wrote them in.
  for (const id of ['a', 'b', 's'] as const)
    writeControl(controls[id], { fault: 'ok', progressFrames: 2, progressIntervalMs: 25, ...overrides[id] });
}

function requestOf(file: string, query: string): Promise<EngineEvent> {
  return waitForEvent(file, (e) => e.ev === 'request' && e.method === 'retrieve' && e.params?.query === query);
}

beforeAll(async () => {
  behave();
  [a, b] = await Promise.all([
    procs.engine(['--id', 'a', '--control', controls.a]),
    procs.engine(['--id', 'b', '--id-prefix', 'b-', '--control', controls.b, '--caps', B_CAPS]),
  ]);
  gw = await procs.gateway({
    engines: [
      { id: 'a', transport: 'http', url: a.url },
      { id: 'b', transport: 'http', url: b.url },
      {
        id: 's',
        transport: 'stdio',
        command: stdioEngineCommand(['--id', 's', '--id-prefix', 's-', '--events', sEvents, '--control', controls.s]),
      },
    ],
    gateway: { progressFramesPerSecond: 1000, bodyTimeoutMs: 1_000, retry: { budgetRatio: 0, minPerWindow: 0, windowMs: 10_000 } },
  });
  client = await connectHttp(gw.url);
  procs.defer(() => client.close());
});

afterAll(() => behave());

describe('MCP over Streamable HTTP (2026-07-28)', () => {
  it('negotiates the 2026-07-28 era and lists search, list_engines and rerank with usable schemas', async () => {
    expect(client.getProtocolEra()).toBe('modern');
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name).sort()).toEqual(['list_engines', 'rerank', 'search']);
    const search = tools.find((tool) => tool.name === 'search')!;
    expect(search.description).toMatch(/untrusted/);
    expect(search.inputSchema.required).toEqual(['query']);
    const props = search.inputSchema.properties as Record<string, Record<string, unknown>>;
    expect(props.k).toMatchObject({ type: 'integer', minimum: 1, maximum: 100 });
    expect((props.engines!.items as { enum: string[] }).enum.sort()).toEqual(['a', 'b', 's']);
    expect(props.cursor).toMatchObject({ type: 'string' });
    expect(props.filter).toBeUndefined(); // no engine advertises `filter`
    expect(search.annotations).toMatchObject({ readOnlyHint: true, openWorldHint: true });
    expect(search.outputSchema?.properties).toHaveProperty('hits');
    const rerank = tools.find((tool) => tool.name === 'rerank')!;
    expect((rerank.inputSchema.properties as Record<string, Record<string, unknown>>).passages).toMatchObject({ maxItems: 8 });
  });

  it('search fuses hits from several engines, each with its lineage, fenced as untrusted data', async () => {
    const result = await client.callTool({ name: 'search', arguments: { query: 'graph index', k: 6 } });
    expect(result.isError).toBeFalsy();
    const out = structured<SearchOutput>(result);
    expect(out.engines.sort()).toEqual(['a', 'b', 's']);
    expect(out.hits.length).toBe(6);
    const origins = new Set(out.hits.map((hit) => hit.meta?.engine));
    expect(origins.size).toBeGreaterThanOrEqual(2);
    for (const hit of out.hits) expect(['a', 'b', 's']).toContain(hit.meta?.engine);
    expect(typeof out.nextCursor).toBe('string');
    const [header, data] = result.content.map((block) => (block.type === 'text' ? block.text : ''));
    expect(header).toMatch(/^Federated search for "graph index": 6 hits from engines a, b, s \(rrf fusion\)\./);
    expect(header).toMatch(/untrusted data/);
    const nonce = /^<retrieved-data nonce="([0-9a-f]{8})">/.exec(data!)?.[1];
    expect(nonce).toBeDefined();
    expect(data!.endsWith(`</retrieved-data nonce="${nonce}">`)).toBe(true);
    expect(data).toContain(`[1] ${String(out.hits[0]!.id)} · engine ${out.hits[0]!.meta!.engine} #${out.hits[0]!.meta!.engineRank}`);
    // The call went through the RCP service: it is in the gateway's request log.
    const line = await until('the request line', () =>
      logLines(gw.stderr()).find(
        (l) => l.msg === 'request' && typeof l.id === 'string' && l.id.startsWith('mcp:') && l.method === 'retrieve',
      ),
    );
    expect(line).toMatchObject({ code: 0, transport: 'http' });
  });

  it('search follows its cursor to the next page and can be limited to some engines', async () => {
    const first = structured<SearchOutput>(await client.callTool({ name: 'search', arguments: { query: 'graph index', k: 3 } }));
    const next = structured<SearchOutput>(
      await client.callTool({ name: 'search', arguments: { query: 'graph index', k: 3, cursor: first.nextCursor } }),
    );
    expect(next.hits).toHaveLength(3);
    const seen = new Set(first.hits.map((hit) => String(hit.id)));
    for (const hit of next.hits) expect(seen.has(String(hit.id))).toBe(false);
    const onlyB = structured<SearchOutput>(
      await client.callTool({ name: 'search', arguments: { query: 'graph index', k: 4, engines: ['b'] } }),
    );
    expect(onlyB.engines).toEqual(['b']);
    expect(onlyB.hits.every((hit) => hit.meta?.engine === 'b' && String(hit.id).startsWith('b-'))).toBe(true);
  });

  it('progress arrives in order, strictly increasing to 1, all before the result', async () => {
    const seen: Array<{ progress: number; total?: number; message?: string; afterResult: boolean }> = [];
    let resolved = false;
    const result = await client.callTool(
      { name: 'search', arguments: { query: 'retrieval ranking', k: 4 } },
      { onprogress: (p) => seen.push({ ...p, afterResult: resolved }) },
    );
    resolved = true;
    expect(result.isError).toBeFalsy();
    expect(seen.length).toBeGreaterThanOrEqual(3);
    for (let i = 1; i < seen.length; i++) expect(seen[i]!.progress).toBeGreaterThan(seen[i - 1]!.progress);
    expect(seen.at(-1)).toMatchObject({ progress: 1, total: 1, afterResult: false });
    expect(seen.at(-1)!.message).toMatch(/^3 of 3 engines answered; engine \w answered; \d+ partial hits fused so far$/);
    expect(seen.some((p) => /partial hits? fused so far/.test(p.message ?? ''))).toBe(true);
  });

  it('a cancelled call cancels every live leg: HTTP legs disconnected, the stdio leg sent notifications/cancel', async () => {
    behave({ a: { fault: 'hang' }, b: { fault: 'hang' }, s: { fault: 'hang' } });
    const query = 'retrieval cancel over mcp';
    const controller = new AbortController();
    const pending = client.callTool({ name: 'search', arguments: { query, k: 3 } }, { signal: controller.signal });
    const [ra, rb, rs] = await Promise.all([requestOf(a.eventsFile, query), requestOf(b.eventsFile, query), requestOf(sEvents, query)]);
    controller.abort('the user clicked stop');
    await expect(pending).rejects.toThrow();
    await waitForEvent(a.eventsFile, (e) => e.ev === 'abort' && e.id === ra.id);
    await waitForEvent(b.eventsFile, (e) => e.ev === 'abort' && e.id === rb.id);
    const cancel = await waitForEvent(sEvents, (e) => e.ev === 'cancel' && e.id === rs.id);
    expect(cancel.known).toBe(true);
    behave();
    // The gateway saw the RCP call cancelled (not a deadline or a disconnect), and answered it exactly once.
    const line = await until('the request line of the cancelled call', () =>
      logLines(gw.stderr()).find((l) => l.msg === 'request' && l.abort === 'cancel'),
    );
    expect(line).toMatchObject({ method: 'retrieve', code: -32006 });
    expect(logLines(gw.stderr()).filter((l) => l.msg === 'request' && l.abort === 'cancel')).toHaveLength(1);
  });

  it('bad arguments are tool errors that carry the RCP code and the field', async () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ query: 'graph', k: 0 }, 'k'],
      [{ query: 'graph', k: 2.5 }, 'k'],
      [{ k: 3 }, 'query'],
      [{ query: 'graph', engines: ['nope'] }, 'engines.0'],
    ];
    for (const [args, field] of cases) {
      const result = await client.callTool({ name: 'search', arguments: args });
      expect(result.isError).toBe(true);
      const { error } = structured<ToolErrorOutput>(result);
      expect(error).toMatchObject({ code: -32602, symbol: 'InvalidParams', retryable: false, data: { field } });
      expect(textOf(result)).toMatch(
        new RegExp(`^search failed: RCP error -32602 InvalidParams: .*\\(argument "${field.replace('.', '\\.')}"\\)\\. Fix the arguments`),
      );
    }
    const badCursor = await client.callTool({ name: 'search', arguments: { query: 'graph', cursor: 'not-a-cursor' } });
    expect(badCursor.isError).toBe(true);
    expect(structured<ToolErrorOutput>(badCursor).error.code).toBe(-32602);
    await expect(client.callTool({ name: 'no_such_tool', arguments: {} })).rejects.toThrow(/no_such_tool/);
  });

  it('a failing engine shows as degraded; when every engine fails the tool error is -32010 and retryable', async () => {
    behave({ b: { fault: 'fail', failCode: -32603 } });
    const degraded = await client.callTool({ name: 'search', arguments: { query: 'graph index', k: 3 } });
    expect(degraded.isError).toBeFalsy();
    const out = structured<SearchOutput>(degraded);
    expect(out.engines.sort()).toEqual(['a', 's']);
    expect(out.degraded?.map((d) => d.engine)).toEqual(['b']);
    expect(textOf(degraded)).toMatch(/Degraded: engine b did not contribute/);
    behave({ a: { fault: 'fail' }, b: { fault: 'fail' }, s: { fault: 'fail' } });
    const failed = await client.callTool({ name: 'search', arguments: { query: 'graph index', k: 3 } });
    behave();
    expect(failed.isError).toBe(true);
    expect(structured<ToolErrorOutput>(failed).error).toMatchObject({ code: -32010, symbol: 'BackendUnavailable', retryable: true });
    expect(textOf(failed)).toMatch(/^search failed: RCP error -32010 BackendUnavailable: .*retry later/);
  });

  it('rerank is routed to the engine that offers it and answers best first', async () => {
    const passages = ['nothing relevant at all', 'graph index query', 'graph'];
    const result = await client.callTool({ name: 'rerank', arguments: { query: 'graph index', passages } });
    expect(result.isError).toBeFalsy();
    const { ranking } = structured<{ ranking: Array<{ index: number; score: number }> }>(result);
    expect(ranking.map((r) => r.index)).toEqual([1, 2, 0]);
    for (let i = 1; i < ranking.length; i++) expect(ranking[i]!.score).toBeLessThanOrEqual(ranking[i - 1]!.score);
    await waitForEvent(b.eventsFile, (e) => e.ev === 'request' && e.method === 'rerank');
    const tooMany = await client.callTool({
      name: 'rerank',
      arguments: { query: 'graph', passages: Array.from({ length: 9 }, (_, i) => `p${i}`) },
    });
    expect(tooMany.isError).toBe(true);
    expect(structured<ToolErrorOutput>(tooMany).error.code).toBe(-32602);
  });

  it('list_engines and the catalog resources show every engine with its live state', async () => {
    const result = await client.callTool({ name: 'list_engines', arguments: {} });
    const { engines } = structured<{ engines: Array<{ id: string; status: string; breaker: string; capabilities: string[] }> }>(result);
    expect(engines.map((engine) => engine.id)).toEqual(['a', 'b', 's']);
    for (const engine of engines) expect(engine).toMatchObject({ status: 'ready', breaker: 'closed' });
    expect(engines[1]!.capabilities).toEqual(['rerank', 'retrieve', 'streaming']);
    expect(textOf(result)).toMatch(/^3 engines, 3 ready:/);
    const catalog = await client.readResource({ uri: 'rcpgw://catalog' });
    const body = JSON.parse((catalog.contents[0] as { text: string }).text) as { engines: Array<{ id: string }> };
    expect(body.engines.map((engine) => engine.id)).toEqual(['a', 'b', 's']);
    const { resources } = await client.listResources();
    expect(resources.map((resource) => resource.uri).sort()).toEqual([
      'rcpgw://catalog',
      'rcpgw://engines/a',
      'rcpgw://engines/b',
      'rcpgw://engines/s',
    ]);
    const one = await client.readResource({ uri: 'rcpgw://engines/s' });
    expect(JSON.parse((one.contents[0] as { text: string }).text)).toMatchObject({ id: 's', _meta: { status: 'ready' } });
  });
});

describe('a 2025-era MCP client on the same endpoint', () => {
  it('initializes statelessly, lists the tools and searches with progress', async () => {
    const legacy = await connectHttp(gw.url, 'legacy');
    try {
      expect(legacy.getProtocolEra()).toBe('legacy');
      const { tools } = await legacy.listTools();
      expect(tools.map((tool) => tool.name).sort()).toEqual(['list_engines', 'rerank', 'search']);
      const progress: number[] = [];
      const result = await legacy.callTool(
        { name: 'search', arguments: { query: 'graph index', k: 4 } },
        { onprogress: (p) => progress.push(p.progress) },
      );
      const out = structured<SearchOutput>(result);
      expect(new Set(out.hits.map((hit) => hit.meta?.engine)).size).toBeGreaterThanOrEqual(2);
      expect(progress.at(-1)).toBe(1);
      const bad = await legacy.callTool({ name: 'search', arguments: { query: 'graph', k: -1 } });
      expect(structured<ToolErrorOutput>(bad).error.code).toBe(-32602);
    } finally {
      await legacy.close();
    }
  });
});

describe('MCP over HTTP against a stalled body', () => {
  it('answers 408 once the body stalls for gateway.bodyTimeoutMs, as /rcp does', async () => {
    const { port } = new URL(gw.url);
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = connect(Number(port), '127.0.0.1', () => {
        socket.write(
          'POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n' +
            'Accept: application/json, text/event-stream\r\nContent-Length: 100\r\n\r\n{"jsonrpc":',
        );
      });
      let text = '';
      socket.setEncoding('utf8');
      socket.on('data', (chunk: string) => (text += chunk));
      socket.on('close', () => resolve(text));
      socket.on('error', reject);
    });
    expect(answer).toMatch(/^HTTP\/1\.1 408/);
    expect(answer).toContain('stalled');
  }, 20_000);
});

describe('MCP listen streams over HTTP', () => {
  const listen = (id: number, signal: AbortSignal): Promise<Response> =>
    fetch(`${new URL(gw.url).origin}/mcp`, {
      method: 'POST',
      signal,
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-method': 'subscriptions/listen',
        'mcp-protocol-version': '2026-07-28',
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id,
        method: 'subscriptions/listen',
        params: {
          notifications: { toolsListChanged: true },
          _meta: {
            'io.modelcontextprotocol/protocolVersion': '2026-07-28',
            'io.modelcontextprotocol/clientInfo': { name: 'listener', version: '0' },
            'io.modelcontextprotocol/clientCapabilities': {},
          },
        },
      }),
    });

  it(`holds at most ${LISTEN_STREAMS_PER_CLIENT} per client (429 + Retry-After beyond), and takes one again once a stream ends`, async () => {
    const controllers = Array.from({ length: LISTEN_STREAMS_PER_CLIENT }, () => new AbortController());
    const open = await Promise.all(controllers.map((controller, i) => listen(1000 + i, controller.signal)));
    for (const res of open) expect(res.status).toBe(200);
    const over = await listen(2000, new AbortController().signal);
    expect(over.status).toBe(429);
    expect(over.headers.get('retry-after')).toBe('5');
    for (const controller of controllers) controller.abort();
    let attempt = 0;
    const again = await until('a listen stream to be taken again', async () => {
      const controller = new AbortController();
      const { status } = await listen(3000 + attempt++, controller.signal);
      controller.abort();
      return status === 429 ? undefined : status;
    });
    expect(again).toBe(200);
  });
});
