/**
 * Progress from engines over SSE (§5.2, §9), as the gateway reads it: CRLF line endings, comment
 * lines, frames split across chunks (mid-JSON and between CR and LF), frames under a token that
 * is not the leg's (ignored), and a stream that ends without its final frame (that leg failed).
 * The engines are the hand-made raw-SSE fixture, so the bytes are exactly what the test says.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rpcSse } from '../support/http-client.js';
import { startGateway, startHttpEngine, type GatewayHandle } from '../support/processes.js';
import { emittedErrors, schemaCrossCheck, schemaCrossCheckBanner } from '../support/spec-validator.js';
import { cleanups, runCleanups, startRawSseEngine } from './helpers.js';

interface RetrieveResult {
  hits: Array<{ id: string; meta: { engine: string } }>;
  _meta: { engines: string[]; degraded?: Array<{ engine: string; code: number; reason: string; detail?: string }> };
}

let gw: GatewayHandle;

beforeAll(async () => {
  const tricky = await startRawSseEngine('tricky', 'tricky');
  const truncated = await startRawSseEngine('no-final', 'truncated');
  const healthy = await startHttpEngine(['--id', 'healthy']);
  cleanups.push(() => healthy.stop());
  gw = await startGateway({
    config: {
      engines: [
        { id: 'tricky', transport: 'http', url: tricky.url },
        { id: 'truncated', transport: 'http', url: truncated.url },
        { id: 'healthy', transport: 'http', url: healthy.url },
      ],
      gateway: { progressFramesPerSecond: 1000 },
    },
  });
  cleanups.push(() => gw.stop());
});

afterAll(async () => {
  await runCleanups();
  console.log(schemaCrossCheckBanner());
  expect(emittedErrors()).toEqual([]);
});

const only = (engines: string[]): Record<string, unknown> => ({ 'x-rcpgw': { engines } });

describe('parsing engine streams', () => {
  it('reads CRLF, comments and split chunks, relays the leg’s own progress and ignores other tokens', async () => {
    const reply = await rpcSse(gw.url, 'retrieve', { query: 'retrieval fusion', k: 3, _meta: only(['tricky']) }, { progressToken: 'p' });
    expect(reply.parseErrors).toEqual([]);
    const result = reply.final?.result as unknown as RetrieveResult;
    expect(result._meta.engines).toEqual(['tricky']);
    expect(result._meta.degraded).toBeUndefined();
    expect(result.hits.map((h) => h.id)).toEqual(['tricky-1', 'tricky-2', 'tricky-3']);
    const messages = reply.progress.map((p) => p.message ?? '');
    expect(messages.some((m) => m.includes('engine tricky') && m.includes('halfway'))).toBe(true);
    expect(messages.some((m) => m.includes('decoy'))).toBe(false);
    for (const frame of reply.progress) expect(frame.progressToken).toBe('p');
  });

  it('counts a stream that ends without a final frame as that leg failing', async () => {
    const reply = await rpcSse(
      gw.url,
      'retrieve',
      { query: 'retrieval fusion', k: 3, _meta: only(['truncated', 'healthy']) },
      { progressToken: 7 },
    );
    expect(reply.final?.error).toBeUndefined();
    const result = reply.final?.result as unknown as RetrieveResult;
    expect(result._meta.engines).toEqual(['healthy']);
    expect(result._meta.degraded).toEqual([expect.objectContaining({ engine: 'truncated', reason: 'malformed' })]);
    expect(result.hits.every((h) => h.meta.engine === 'healthy')).toBe(true);
    // Its failure is reported as a leg frame.
    expect(reply.progress.some((p) => /engine truncated failed/.test(p.message ?? ''))).toBe(true);
    // Its progress is relayed while it lasts. Asked alone: beside another engine, a stage text may
    // be coalesced away when the other engine's frame follows within the relay's interval (newest
    // text kept, progress.ts), which made this check depend on timing.
    const alone = await rpcSse(gw.url, 'retrieve', { query: 'retrieval fusion', k: 3, _meta: only(['truncated']) }, { progressToken: 8 });
    expect(alone.final?.error?.code).toBe(-32010);
    expect(alone.progress.some((p) => (p.message ?? '').includes('engine truncated') && (p.message ?? '').includes('started'))).toBe(true);
  });

  it('fails the call with -32010 when the only leg’s stream ends without a final frame', async () => {
    const reply = await rpcSse(gw.url, 'retrieve', { query: 'retrieval', k: 3, _meta: only(['truncated']) }, { progressToken: 'solo' });
    expect(reply.final?.error?.code).toBe(-32010);
    expect(reply.framesAfterFinal).toBe(0);
  });
});

schemaCrossCheck();
