/**
 * Tenant scoping against a real gateway process: engines a principal may reach (fan-out,
 * routing, catalog), read vs write scopes (§15.3), maxK and deadline ceilings, cursors bound to
 * the principal they were issued to, and the stdio principal.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { rpc } from '../support/http-client.js';
import { GATEWAY_CLI, readEvents, tmpDir, writeConfig, type EngineHandle, type GatewayHandle } from '../support/processes.js';
import { StdioClient } from '../support/stdio-client.js';
import { suiteProcesses } from '../support/suite.js';
import { keyHash } from './support.js';

const procs = suiteProcesses();
/** Matches most of the test engine's built-in corpus. */
const Q = 'retrieval ranking fusion graph index engine';
const KEYS = { alice: 'alice-key-0a1b2c3d4e5f', bob: 'bob-key-9f8e7d6c5b4a', carol: 'carol-key-1357924680ab' };
const as = (who: keyof typeof KEYS): { headers: Record<string, string> } => ({ headers: { authorization: `Bearer ${KEYS[who]}` } });

let web: EngineHandle;
let docs: EngineHandle;
let gw: GatewayHandle;
const tenants = { 'team-a': { engines: ['web'], maxK: 3, maxDeadlineMs: 2_000 }, 'team-b': {} };

beforeAll(async () => {
  web = await procs.engine(['--id', 'web']);
  // docs alone can embed: a principal scoped away from it must not be told the gateway embeds.
  const docsCaps = { retrieve: { maxK: 50, modes: ['sparse'], scoreFloor: 0 }, streaming: {}, embed: { dimension: 4 } };
  docs = await procs.engine(['--id', 'docs', '--caps', JSON.stringify(docsCaps)]);
  gw = await procs.gateway({
    engines: [
      { id: 'web', transport: 'http', url: web.url, writer: true },
      { id: 'docs', transport: 'http', url: docs.url },
    ],
    gateway: {
      logLevel: 'warn',
      auth: {
        enabled: true,
        apiKeys: [
          { id: 'alice', hash: keyHash(KEYS.alice), tenant: 'team-a', scopes: ['rcp:read'] },
          { id: 'bob', hash: keyHash(KEYS.bob), tenant: 'team-b', scopes: ['rcp:read', 'rcp:write'] },
          { id: 'carol', hash: keyHash(KEYS.carol), tenant: 'team-b', scopes: ['rcp:read'] },
        ],
      },
      tenants,
    },
  });
});

interface Catalog {
  engines: Array<{ id: string }>;
}
interface Retrieved {
  hits: unknown[];
  nextCursor?: string;
  _meta: { engines: string[]; deadlineMs: number };
}

describe('engine scope', () => {
  it('initialize and info advertise what the principal engines can do, nothing of the others (§15.6)', async () => {
    interface Described {
      capabilities: Record<string, unknown>;
    }
    const init = { protocolVersion: 1, client: { name: 'scope-test' }, capabilities: {} };
    const alice = await rpc<Described>(gw.url, 'initialize', init, as('alice'));
    expect(Object.keys(alice.result!.capabilities)).toContain('retrieve');
    expect(alice.result!.capabilities).not.toHaveProperty('embed');
    const aliceInfo = await rpc<Described>(gw.url, 'info', {}, as('alice'));
    expect(aliceInfo.result!.capabilities).not.toHaveProperty('embed');
    const bob = await rpc<Described>(gw.url, 'info', {}, as('bob'));
    expect(bob.result!.capabilities).toHaveProperty('embed');
    // Unadvertised to alice, so refused as such before any engine is chosen (§12 -32003).
    const embed = await rpc(gw.url, 'embed', { inputs: ['wing'] }, as('alice'));
    expect(embed.error).toMatchObject({ code: -32003 });
    const bobEmbed = await rpc(gw.url, 'embed', { inputs: ['wing'] }, as('bob'));
    expect(bobEmbed.error).toBeUndefined();
  });

  it('catalog/list shows each principal only the engines it may use', async () => {
    const alice = await rpc<Catalog>(gw.url, 'catalog/list', {}, as('alice'));
    expect(alice.result!.engines.map((e) => e.id)).toEqual(['web']);
    const bob = await rpc<Catalog>(gw.url, 'catalog/list', {}, as('bob'));
    expect(bob.result!.engines.map((e) => e.id).sort()).toEqual(['docs', 'web']);
  });

  it('fans out only to the principal engines, and answers -32602 for an engine named outside them (no fallback)', async () => {
    const fanned = await rpc<Retrieved>(gw.url, 'retrieve', { query: Q, k: 2 }, as('alice'));
    expect(fanned.result!._meta.engines).toEqual(['web']);
    const asked = (): number => readEvents(docs.eventsFile).filter((e) => e.ev === 'request' && e.method === 'retrieve').length;
    const before = asked();
    const named = [
      { query: Q, _meta: { 'x-rcpgw': { engines: ['docs'] } } },
      { query: Q, _meta: { 'x-rcpgw': { engines: ['web', 'docs'] } } },
      { query: Q, _meta: { 'x-rcpgw': { engine: 'docs' } } },
    ];
    for (const params of named) {
      const reply = await rpc(gw.url, 'retrieve', params, as('alice'));
      expect(reply.error, JSON.stringify(params)).toMatchObject({ code: -32602 });
    }
    const header = await rpc(gw.url, 'retrieve', { query: Q }, { headers: { ...as('alice').headers, 'x-rcpgw-engine': 'docs' } });
    expect(header.error?.code).toBe(-32602);
    expect(asked()).toBe(before);
    // The same names are fine for a principal whose tenant reaches them.
    const bob = await rpc<Retrieved>(gw.url, 'retrieve', { query: Q, _meta: { 'x-rcpgw': { engines: ['docs'] } } }, as('bob'));
    expect(bob.result!._meta.engines).toEqual(['docs']);
  });

  it('clamps k to the tenant maxK and the deadline to its ceiling', async () => {
    const reply = await rpc<Retrieved>(gw.url, 'retrieve', { query: Q, k: 10, _meta: { deadlineMs: 9_000 } }, as('alice'));
    expect(reply.result!.hits.length).toBeLessThanOrEqual(3);
    expect(reply.result!._meta.deadlineMs).toBe(2_000);
    const bob = await rpc<Retrieved>(gw.url, 'retrieve', { query: Q, k: 10 }, as('bob'));
    expect(bob.result!.hits.length).toBeGreaterThan(3);
  });
});

describe('method scope', () => {
  it('refuses index/* without rcp:write and vendor methods without rcp:admin with -32012, before capability gating', async () => {
    const write = await rpc(gw.url, 'index/add', { documents: [{ id: 'd1', text: 'wing' }] }, as('alice'));
    expect(write.status).toBe(200); // a JSON-RPC answer (§5.2), not a transport refusal
    expect(write.error).toMatchObject({ code: -32012, data: { detail: 'requires scope rcp:write' } });
    expect((await rpc(gw.url, 'index/delete', { ids: ['d1'] }, as('carol'))).error?.code).toBe(-32012);
    expect((await rpc(gw.url, 'x-test/echo', {}, as('bob'))).error?.code).toBe(-32012);
    // A writer gets past authorisation (whatever the engine then says).
    const allowed = await rpc(gw.url, 'index/add', { documents: [{ id: 'd1', text: 'wing' }] }, as('bob'));
    expect(allowed.error?.code).not.toBe(-32012);
  });
});

describe('cursors', () => {
  it('are bound to the principal: replayed by another principal they are rejected', async () => {
    const first = await rpc<Retrieved>(gw.url, 'retrieve', { query: Q, k: 2 }, as('bob'));
    const cursor = first.result!.nextCursor;
    expect(typeof cursor).toBe('string');
    const replayed = await rpc(gw.url, 'retrieve', { query: Q, k: 2, cursor }, as('carol'));
    expect(replayed.error).toMatchObject({ code: -32602, data: { field: 'cursor' } });
    const own = await rpc<Retrieved>(gw.url, 'retrieve', { query: Q, k: 2, cursor }, as('bob'));
    expect(own.result!.hits.length).toBeGreaterThan(0);
  });
});

describe('stdio principal', () => {
  it('runs stdio calls as the configured principal', async () => {
    const config = writeConfig(tmpDir(), {
      engines: [
        { id: 'web', transport: 'http', url: web.url, writer: true },
        { id: 'docs', transport: 'http', url: docs.url },
      ],
      gateway: { logLevel: 'warn', auth: { stdioPrincipal: { id: 'local-tool', tenant: 'team-a', scopes: ['rcp:read'] } }, tenants },
    });
    const client = new StdioClient([process.execPath, GATEWAY_CLI, 'stdio', '--config', config]);
    procs.defer(() => client.close());
    await client.request('initialize', { protocolVersion: 1, client: { name: 'scoping' }, capabilities: {} });
    const catalog = await client.request<Catalog>('catalog/list', {});
    expect(catalog.result!.engines.map((e) => e.id)).toEqual(['web']);
    expect((await client.request('index/add', { documents: [{ id: 'd', text: 't' }] })).error?.code).toBe(-32012);
  });
});
