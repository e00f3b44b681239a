/**
 * Client errors are not engine failures (§12.2), against real engine processes and a real
 * gateway with the default breaker settings: a request every engine rejects as invalid is
 * answered with the engines' code (`retryable: false`, their `data`), never -32010, and never
 * opens a breaker, while a well-behaved client keeps getting answers; a client error from some
 * engines is a per-engine note.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { emittedErrors, schemaCrossCheckBanner } from '../support/spec-validator.js';
import { writeControl, type GatewayHandle } from '../support/processes.js';
import { errorOf, Fleet, rpc, withRetrieve, type TestEngine } from '../routing/fixtures.js';
import { breakerState } from '../resilience/helpers.js';

const QUERY = 'retrieval ranking fusion vector sparse graph';
/** A text block without its text: well-formed for the gateway, -32602 (`query`) for every engine. */
const INVALID_QUERY = { type: 'text' };

const fleet = new Fleet();
let a: TestEngine;
let b: TestEngine;
let refuser: TestEngine; // answers every retrieve with -32005
let both: GatewayHandle;
let mixed: GatewayHandle;

interface Retrieved {
  hits: unknown[];
  usage: { notes?: string[] };
  _meta: { engines: string[]; degraded?: Array<{ engine: string; code: number; reason: string }> };
}

beforeAll(async () => {
  [a, b, refuser] = await Promise.all([
    fleet.engine('a', withRetrieve()),
    fleet.engine('b', withRetrieve(), ['--id-prefix', 'b-']),
    fleet.engine('refuser', withRetrieve()),
  ]);
  writeControl(refuser.control, { fault: 'fail', failCode: -32005 });
  // Default breaker settings (volumeThreshold 5, 50 % over 10 s): no `breaker` key anywhere.
  [both, mixed] = await Promise.all([fleet.gateway([{ engine: a }, { engine: b }]), fleet.gateway([{ engine: a }, { engine: refuser }])]);
});

afterAll(async () => {
  await fleet.stop();
  console.log(schemaCrossCheckBanner());
  expect(emittedErrors()).toEqual([]);
});

describe('every engine rejects the request as invalid', () => {
  it('answers the engines’ -32602 (retryable: false, their data), opens no breaker, and a concurrent client keeps its answers', async () => {
    const invalid = Array.from({ length: 40 }, () => rpc(both.url, 'retrieve', { query: INVALID_QUERY, k: 3 }));
    const valid = Array.from({ length: 20 }, () => rpc<Retrieved>(both.url, 'retrieve', { query: QUERY, k: 3 }));
    const [rejected, answered] = await Promise.all([Promise.all(invalid), Promise.all(valid)]);

    for (const reply of rejected) {
      const { code, data } = errorOf(reply);
      expect(code).toBe(-32602);
      expect(data).toMatchObject({ retryable: false, field: 'query' });
      expect(data.engines).toEqual([
        expect.objectContaining({ engine: 'a', code: -32602, data: expect.objectContaining({ field: 'query' }) }),
        expect.objectContaining({ engine: 'b', code: -32602, data: expect.objectContaining({ field: 'query' }) }),
      ]);
    }
    for (const reply of answered) {
      expect(reply.result!.hits).toHaveLength(3);
      expect(reply.result!._meta.engines).toEqual(['a', 'b']);
      expect(reply.result!._meta.degraded).toBeUndefined();
    }
    // Every invalid request reached both engines: the breakers had their volume, and stayed closed.
    expect(a.requests('retrieve').length).toBeGreaterThanOrEqual(60);
    expect(await breakerState(both.url, 'a')).toBe('closed');
    expect(await breakerState(both.url, 'b')).toBe('closed');
    const after = await rpc<Retrieved>(both.url, 'retrieve', { query: QUERY, k: 3 });
    expect(after.result!._meta.engines).toEqual(['a', 'b']);
  });
});

describe('some engines reject the request', () => {
  it('is a per-engine note (its code kept), never a breaker failure', async () => {
    for (let i = 0; i < 15; i++) {
      const reply = await rpc<Retrieved>(mixed.url, 'retrieve', { query: QUERY, k: 3 });
      const { _meta, usage } = reply.result!;
      expect(_meta.engines).toEqual(['a']);
      expect(_meta.degraded).toEqual([expect.objectContaining({ engine: 'refuser', code: -32005, reason: 'engine-error' })]);
      expect(usage.notes).toContain('engine refuser dropped: engine-error (-32005)');
    }
    expect(await breakerState(mixed.url, 'refuser')).toBe('closed');
    expect(refuser.requests('retrieve')).toHaveLength(15); // asked every time: never skipped as circuit-open
  });
});
