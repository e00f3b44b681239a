/**
 * Capabilities that tell the truth (§6, §13.2, §16.4): a stdio session keeps the set it
 * initialized with when an engine goes down (calls fail -32010, the set does not shrink), and
 * embedder metadata is advertised only when routing resolves to a single model.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { GATEWAY_CLI, tmpDir, writeConfig } from '../support/processes.js';
import { emittedErrors, schemaCrossCheck, schemaCrossCheckBanner } from '../support/spec-validator.js';
import { StdioClient } from '../support/stdio-client.js';
import { Fleet, rpc, withRetrieve, type Caps } from './fixtures.js';

const fleet = new Fleet();
const clients: StdioClient[] = [];

afterAll(async () => {
  for (const client of clients) await client.close();
  await fleet.stop();
  console.log(schemaCrossCheckBanner());
  expect(emittedErrors()).toEqual([]);
});

type CapsReply = { capabilities: Caps };

describe('capability stability across an engine going down (§13.2)', () => {
  it('keeps advertising what the session initialized with; calls fail with -32010', async () => {
    const [embedder, retriever] = await Promise.all([
      fleet.engine('embedder', withRetrieve({ embed: { dimension: 8, identity: 'only-model' }, rerank: { methods: ['cross-encoder'] } })),
      fleet.engine('retriever', withRetrieve()),
    ]);
    const config = writeConfig(tmpDir(), {
      engines: [
        { id: 'embedder', transport: 'http', url: embedder.url },
        { id: 'retriever', transport: 'http', url: retriever.url },
      ],
      gateway: { logLevel: 'warn' },
    });
    const client = new StdioClient([process.execPath, GATEWAY_CLI, 'stdio', '--config', config]);
    clients.push(client);
    const init = await client.request<CapsReply>('initialize', { protocolVersion: 1, client: { name: 'caps-test' }, capabilities: {} });
    const caps = init.result!.capabilities;
    expect(caps.embed).toEqual({ dimension: 8, identity: 'only-model' }); // one embedder: its metadata is true
    expect(caps.rerank).toEqual({ methods: ['cross-encoder'] });
    expect(caps.pagination).toEqual({});
    expect((await client.request('embed', { inputs: ['wing'] })).result).toBeDefined();

    await embedder.stop();
    const info = await client.request<CapsReply>('info', {});
    expect(info.result!.capabilities).toEqual(caps);
    const embed = await client.request('embed', { inputs: ['wing'] });
    expect(embed.error).toMatchObject({ code: -32010, data: { engine: 'embedder' } });
    const rerank = await client.request('rerank', { query: 'q', passages: ['a'] });
    expect(rerank.error?.code).toBe(-32010);
    // The other engine keeps serving what it can.
    const retrieve = await client.request<{ hits: unknown[] }>('retrieve', { query: 'graph index', k: 2 });
    expect(retrieve.result!.hits).toHaveLength(2);
    expect(client.violations).toEqual([]);
  });
});

describe('embedder metadata only when routing resolves to one model', () => {
  it('advertises a dimension for a routed embedder, none for a mix of models', async () => {
    const a: Caps = withRetrieve({ embed: { dimension: 8, identity: 'model-a', batchLimit: 64, encodings: ['json', 'f32-base64'] } });
    const b: Caps = withRetrieve({ embed: { dimension: 16, identity: 'model-b' } });
    const same: Caps = withRetrieve({ embed: { dimension: 8, identity: 'model-a', batchLimit: 16 } });
    const [ea, eb, es] = await Promise.all([fleet.engine('ea', a), fleet.engine('eb', b), fleet.engine('es', same)]);
    const [mixed, routed, replicas] = await Promise.all([
      fleet.gateway([{ engine: ea }, { engine: eb }]),
      fleet.gateway([{ engine: ea }, { engine: eb }], { routes: { embed: 'eb' } }),
      fleet.gateway([{ engine: ea }, { engine: es }]),
    ]);
    const capsOf = async (url: string): Promise<Caps> => (await rpc<CapsReply>(url, 'info', {})).result!.capabilities;
    expect((await capsOf(mixed.url)).embed).toEqual({});
    expect((await capsOf(routed.url)).embed).toEqual({ dimension: 16, identity: 'model-b' });
    // Two replicas of one model: identity and dimension hold; limits are the tighter one.
    expect((await capsOf(replicas.url)).embed).toEqual({ dimension: 8, identity: 'model-a', batchLimit: 16 });
    const served = await rpc<{ vectors: number[][] }>(routed.url, 'embed', { inputs: ['x'] });
    expect(served.result!.vectors[0]).toHaveLength(16);
  });
});

schemaCrossCheck();
