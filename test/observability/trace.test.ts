/**
 * Trace propagation end to end: a W3C `traceparent` header or `_meta.traceId` reaches every engine
 * (HTTP engines get both the header and `_meta.traceId`, stdio engines `_meta.traceId`), a fresh
 * id is generated when the client sends none, and the response `_meta.traceId` and the gateway's
 * request log line carry the same id. Fanned-out and routed methods alike.
 */
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rpc } from '../support/http-client.js';
import {
  startGateway,
  startHttpEngine,
  stdioEngineCommand,
  tmpDir,
  waitForEvent,
  type EngineEvent,
  type EngineHandle,
  type GatewayHandle,
} from '../support/processes.js';
import { emittedErrors, schemaCrossCheck, schemaCrossCheckBanner } from '../support/spec-validator.js';
import { logLines, until } from './support.js';

let httpEngine: EngineHandle;
let stdioEvents: string;
let gw: GatewayHandle;

beforeAll(async () => {
  httpEngine = await startHttpEngine(['--id', 'web', '--caps', JSON.stringify({ retrieve: { maxK: 50 }, streaming: {}, 'x-test': {} })]);
  stdioEvents = path.join(tmpDir(), 'stdio-events.ndjson');
  gw = await startGateway({
    config: {
      engines: [
        { id: 'web', transport: 'http', url: httpEngine.url },
        { id: 'local', transport: 'stdio', command: stdioEngineCommand(['--id', 'local', '--events', stdioEvents]) },
      ],
    },
  });
});

afterAll(async () => {
  await gw.stop();
  await httpEngine.stop();
  console.log(schemaCrossCheckBanner());
  expect(emittedErrors()).toEqual([]);
});

type Meta = { traceId?: string };
const metaOf = (e: EngineEvent): Meta => (e.params as { _meta?: Meta } | undefined)?._meta ?? {};
const headerOf = (e: EngineEvent, name: string): string | undefined => {
  const value = e.headers?.[name];
  return Array.isArray(value) ? value[0] : value;
};

/** The engines' view of the request that carried `traceId`, and the gateway's log line for it. */
async function observed(
  traceId: string,
  method = 'retrieve',
): Promise<{ web: EngineEvent; local?: EngineEvent; line: Record<string, unknown> }> {
  const web = await waitForEvent(httpEngine.eventsFile, (e) => e.ev === 'request' && e.method === method && metaOf(e).traceId === traceId);
  const local =
    method === 'retrieve'
      ? await waitForEvent(stdioEvents, (e) => e.ev === 'request' && e.method === method && metaOf(e).traceId === traceId)
      : undefined;
  const line = await until('the request log line', () => logLines(gw.stderr()).find((l) => l.msg === 'request' && l.traceId === traceId));
  return { web, local, line };
}

describe('trace propagation', () => {
  it('forwards a W3C traceparent to every engine under our own span', async () => {
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const callerSpan = '00f067aa0ba902b7';
    const res = await rpc(
      gw.url,
      'retrieve',
      { query: 'graph index', k: 3 },
      { headers: { traceparent: `00-${traceId}-${callerSpan}-01` } },
    );
    expect((res.result?._meta as Meta).traceId).toBe(traceId);
    const { web, local, line } = await observed(traceId);
    const forwarded = headerOf(web, 'traceparent');
    expect(forwarded).toMatch(new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`));
    expect(forwarded).not.toContain(callerSpan); // a new span id: the gateway is a hop
    expect(metaOf(local!).traceId).toBe(traceId);
    expect(line).toMatchObject({ method: 'retrieve', code: 0, traceId });
  });

  it('forwards _meta.traceId when no header is sent', async () => {
    const traceId = 'a1b2c3d4e5f60718293a4b5c6d7e8f90';
    const res = await rpc(gw.url, 'retrieve', { query: 'vector dense', k: 2, _meta: { traceId } });
    expect((res.result?._meta as Meta).traceId).toBe(traceId);
    const { web, local, line } = await observed(traceId);
    expect(headerOf(web, 'traceparent')).toMatch(new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`));
    expect(metaOf(local!).traceId).toBe(traceId);
    expect(line.traceId).toBe(traceId);
  });

  it('generates one trace id when the client sends none, the same everywhere', async () => {
    const res = await rpc(gw.url, 'retrieve', { query: 'stream cancel', k: 2 });
    const traceId = (res.result?._meta as Meta).traceId!;
    expect(traceId).toMatch(/^[0-9a-f]{32}$/);
    const { web, local, line } = await observed(traceId);
    expect(headerOf(web, 'traceparent')).toContain(traceId);
    expect(metaOf(local!).traceId).toBe(traceId);
    expect(line.traceId).toBe(traceId);
    // Two requests without ids get different ones.
    const again = await rpc(gw.url, 'retrieve', { query: 'stream cancel', k: 2 });
    expect((again.result?._meta as Meta).traceId).not.toBe(traceId);
  });

  it('carries the trace id through a routed (non-fused) method', async () => {
    const traceId = '0123456789abcdef0123456789abcdef';
    const res = await rpc(gw.url, 'x-test/echo', { hello: 'world' }, { headers: { traceparent: `00-${traceId}-1111111111111111-00` } });
    expect(res.error).toBeUndefined();
    expect((res.result?._meta as Meta).traceId).toBe(traceId);
    const { web, line } = await observed(traceId, 'x-test/echo');
    expect(headerOf(web, 'traceparent')).toMatch(new RegExp(`^00-${traceId}-[0-9a-f]{16}-00$`));
    expect(line).toMatchObject({ method: 'x-test/echo', engines: ['web'], traceId });
  });
});

schemaCrossCheck();
