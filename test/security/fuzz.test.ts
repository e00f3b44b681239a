/**
 * Property-based fuzzing (fast-check) of a real gateway process: arbitrary JSON-RPC messages,
 * params, headers and paths from clients, and arbitrary answers from an engine. The gateway must
 * answer every request exactly once with a §12 code, never crash, never leak an engine address
 * or a stack trace, and keep serving a concurrent well-behaved client.
 *
 * Seeded, so `npm test` is reproducible; `npm run test:fuzz` runs many more cases
 * (FUZZ_RUNS, FUZZ_SEED override both).
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GatewayHandle } from '../support/processes.js';
import {
  gatewayOver,
  hostileEngine,
  post,
  rawRequest,
  retrieveMessage,
  type EngineAnswer,
  type HostileEngine,
  type Json,
} from './support.js';

const RUNS = Number(process.env.FUZZ_RUNS ?? 120);
const SEED = Number(process.env.FUZZ_SEED ?? 20_261_201);
const RCP_CODES = new Set([-32700, -32600, -32601, -32602, -32603, ...Array.from({ length: 16 }, (_, i) => -32001 - i)]);
/** Per property: a case takes a few ms to ~100 ms (engine answers that time out take longer). */
const PROPERTY_TIMEOUT_MS = Math.max(60_000, RUNS * 150);
const ALLOWED_STATUS = new Set([200, 204, 400, 404, 413, 415, 429]);

let good: HostileEngine;
let fuzzed: HostileEngine;
let gw: GatewayHandle;
let nextAnswer: EngineAnswer = { hits: [] };
let casesRun = 0;

beforeAll(async () => {
  good = await hostileEngine(() => ({ hits: [{ id: 'good', score: 1, text: 'fine' }] }));
  fuzzed = await hostileEngine((call) => (call.params.query === 'well-behaved' ? { hits: [] } : nextAnswer));
  gw = await gatewayOver([good.url, fuzzed.url], { engineTimeoutMs: 2_000, deadlineMs: 3_000, maxBodyBytes: 65_536 });
});

afterAll(async () => {
  console.log(`fuzz: ${casesRun} cases (seed ${SEED})`);
  expect(gw.proc.exitCode).toBeNull(); // never crashed
  expect(await gw.stop()).toBe(0);
  await Promise.all([good.close(), fuzzed.close()]);
});

/** Everything a client could put in a message, well-formed or not. */
const idArb = fc.oneof(fc.integer(), fc.string({ maxLength: 8 }), fc.constant(null), fc.double(), fc.constant(2 ** 60), fc.object());
const methodArb = fc.oneof(
  fc.constantFrom('retrieve', 'ping', 'info', 'initialize', 'catalog/list', 'embed', 'index/add', 'shutdown', 'notifications/cancel'),
  fc.constantFrom('x-acme/do', 'x-acme/../admin', 'retrieve?x', 'a\r\nb', '', 'NOTIFICATIONS/x', '%2e%2e'),
  fc.string({ maxLength: 20 }),
);
const paramsArb = fc.oneof(
  fc.record(
    { query: fc.oneof(fc.string({ maxLength: 30 }), fc.jsonValue({ maxDepth: 3 })), k: fc.oneof(fc.integer(), fc.double()) },
    { requiredKeys: [] },
  ),
  fc.record({
    _meta: fc.record(
      { traceId: fc.string({ maxLength: 60 }), deadlineMs: fc.integer(), progressToken: fc.jsonValue({ maxDepth: 1 }) },
      { requiredKeys: [] },
    ),
  }),
  fc.jsonValue({ maxDepth: 4 }),
);
const messageArb = fc.record(
  { jsonrpc: fc.oneof(fc.constant('2.0'), fc.string({ maxLength: 4 })), id: idArb, method: methodArb, params: paramsArb },
  { requiredKeys: [] },
);
const bodyArb = fc.oneof(
  { weight: 5, arbitrary: messageArb.map((m) => JSON.stringify(m)) },
  { weight: 2, arbitrary: fc.array(messageArb, { maxLength: 6 }).map((b) => JSON.stringify(b)) },
  { weight: 1, arbitrary: fc.string({ maxLength: 80 }) },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v)) },
);
const headersArb = fc.record(
  {
    'content-type': fc.constantFrom('application/json', 'application/json; charset=utf-8', 'text/plain', 'application/JSON'),
    accept: fc.constantFrom('application/json', 'text/event-stream', '*/*'),
    traceparent: fc.oneof(fc.string({ maxLength: 60 }), fc.constant('00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01')),
    'rcp-session': fc.string({ maxLength: 20 }).filter((s) => /^[\x21-\x7e]*$/.test(s)),
  },
  { requiredKeys: ['content-type'] },
);
const pathArb = fc.oneof(fc.constant(''), fc.constantFrom('/retrieve', '/ping', '/%E0%A4%A', '/x-acme/do', '/a/../b'));

/** The frames in a response body: JSON-RPC objects from plain JSON or from SSE `data:` lines. */
function framesOf(text: string, contentType: string): Json[] {
  if (text === '') return [];
  if (contentType.includes('text/event-stream')) {
    return text
      .split('\n')
      .filter((l) => l.startsWith('data:'))
      .map((l) => JSON.parse(l.slice(5)) as Json);
  }
  const value = JSON.parse(text) as unknown;
  return (Array.isArray(value) ? value : [value]) as Json[];
}

function expectWellFormedAnswer(status: number, text: string, contentType: string): void {
  expect(ALLOWED_STATUS.has(status), `status ${status}: ${text.slice(0, 200)}`).toBe(true);
  expect(text).not.toMatch(/127\.0\.0\.1:\d+|ECONNREFUSED|\n\s+at /);
  for (const frame of framesOf(text, contentType)) {
    if (frame.method === 'notifications/progress' || frame.method === 'notifications/log') continue;
    if ('error' in frame) expect(RCP_CODES.has((frame.error as Json).code as number), JSON.stringify(frame)).toBe(true);
    else if (!('result' in frame)) expect.fail(`neither result nor error: ${JSON.stringify(frame).slice(0, 200)}`);
  }
}

/** A well-behaved client running beside the fuzzer: every one of its requests must succeed. */
function wellBehavedClient(): { stop(): Promise<number> } {
  let running = true;
  let served = 0;
  const loop = (async () => {
    while (running) {
      const res = await post(gw.url, retrieveMessage(`wb-${served}`, { query: 'well-behaved', k: 1 }));
      expect(res.status).toBe(200);
      expect((res.json() as Json).result).toMatchObject({ hits: [{ id: 'good' }] });
      served++;
    }
  })();
  return {
    stop: async () => {
      running = false;
      await loop;
      return served;
    },
  };
}

describe('fuzzing', () => {
  it(
    'arbitrary client bodies, headers and paths: one well-formed answer each, no crash, no leak',
    async () => {
      const client = wellBehavedClient();
      const run = fc.assert(
        fc.asyncProperty(bodyArb, headersArb, pathArb, async (body, headers, suffix) => {
          casesRun++;
          const res = await rawRequest(gw.url, { path: new URL(gw.url).pathname + suffix, body, headers });
          expectWellFormedAnswer(res.status, res.text, String(res.headers['content-type'] ?? ''));
          const sent = JSON.parse(JSON.stringify(safeParse(body) ?? null)) as unknown;
          if (res.status === 200 && isSingleRequest(sent) && !headers.accept?.includes('event-stream')) {
            const answer = res.json() as Json;
            expect(Array.isArray(answer)).toBe(false);
            if (answer.id !== null) expect(answer.id).toEqual((sent as Json).id);
          }
        }),
        { numRuns: RUNS, seed: SEED },
      );
      await run.finally(() => client.stop());
      expect(await client.stop()).toBeGreaterThan(0);
    },
    PROPERTY_TIMEOUT_MS,
  );

  it(
    'arbitrary engine answers: the client always gets a result or a §12 error, the gateway keeps serving',
    async () => {
      const answerArb: fc.Arbitrary<EngineAnswer> = fc.oneof(
        fc.record({
          hits: fc.array(
            fc.record(
              {
                id: fc.jsonValue({ maxDepth: 1 }),
                score: fc.jsonValue({ maxDepth: 1 }),
                text: fc.jsonValue({ maxDepth: 1 }),
                citation: fc.jsonValue({ maxDepth: 2 }),
                meta: fc.jsonValue({ maxDepth: 2 }),
              },
              { requiredKeys: [] },
            ),
            { maxLength: 8 },
          ),
        }),
        fc.dictionary(fc.string({ maxLength: 6 }), fc.jsonValue({ maxDepth: 3 }), { maxKeys: 4 }),
        fc
          .record({
            body: fc.string({ maxLength: 60 }),
            status: fc.constantFrom(200, 500, 503, 429, 404),
            contentType: fc.constantFrom('application/json', 'text/event-stream', 'text/html'),
          })
          .map((raw) => ({ raw })),
        fc.jsonValue({ maxDepth: 3 }).map((v) => ({ raw: { body: JSON.stringify({ jsonrpc: '2.0', id: 1, error: v }) } })),
      );
      const client = wellBehavedClient();
      const run = fc.assert(
        fc.asyncProperty(answerArb, fc.constantFrom('application/json', 'text/event-stream'), async (answer, accept) => {
          casesRun++;
          nextAnswer = answer;
          const res = await post(gw.url, retrieveMessage(1, { query: 'fuzz', k: 5 }), { accept });
          expectWellFormedAnswer(res.status, res.text, String(res.headers['content-type'] ?? ''));
          const frames = framesOf(res.text, String(res.headers['content-type'] ?? ''));
          expect(frames.filter((f) => f.id === 1)).toHaveLength(1);
        }),
        { numRuns: RUNS, seed: SEED },
      );
      await run.finally(() => client.stop());
      expect(await client.stop()).toBeGreaterThan(0);
    },
    PROPERTY_TIMEOUT_MS,
  );
});

function safeParse(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

function isSingleRequest(value: unknown): boolean {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const m = value as Json;
  return m.jsonrpc === '2.0' && typeof m.method === 'string' && (typeof m.id === 'string' || Number.isSafeInteger(m.id));
}
