/**
 * Shadow experiments through a real gateway process: the primary's answer to a request in the
 * experiment (shadow on) is the same as the answer to the same request outside it (no header: shadow
 * off, the ordinary setup), apart from timings, trace ids and cursor signatures, while the shadow
 * engine hangs; and the shadow budget caps the extra upstream load (counted at the engine). One
 * process serves both, so the same engines answer both. Latency is measured by
 * bench/shadow-latency.js, not asserted here.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadCranfieldEval } from '../../src/demo/eval/cranfield.js';
import { rpc } from '../support/http-client.js';
import { readEvents, startGateway, startHttpEngine, tmpDir, type EngineHandle, type GatewayHandle } from '../support/processes.js';
import { waitUntil } from '../resilience/helpers.js';
import { demoEngines, everyEngineReady } from './support.js';
import { fusedCursorPosition } from '../support/fused-cursor.js';

const QUERIES = loadCranfieldEval().queries.slice(0, 20);
const BUDGET = 5;
const comparisonsFile = path.join(tmpDir('rcp-shadow-'), 'comparisons.jsonl');

let stuck: EngineHandle;
let gateway: GatewayHandle;

beforeAll(async () => {
  stuck = await startHttpEngine(['--id', 'stuck', '--fault', 'hang']);
  const experiments = {
    report: true,
    arms: { fused: { engines: ['titles', 'abstracts'] }, stuck: { engines: ['stuck'] } },
    list: [
      {
        id: 'stuck-shadow',
        kind: 'shadow',
        primary: 'fused',
        shadow: 'stuck',
        sample: 1,
        deadlineMs: 300,
        maxConcurrent: 2,
        budgetPerMinute: BUDGET,
        comparisonsFile,
      },
    ],
  };
  const config = {
    engines: [...demoEngines(), { id: 'stuck', transport: 'http', url: stuck.url, engineTimeoutMs: 60_000 }],
    // The ordinary setup: the two demo engines, fused; the stuck engine only ever serves the shadow.
    gateway: { logLevel: 'warn', routes: { retrieve: ['titles', 'abstracts'] }, experiments },
  };
  gateway = await startGateway({ config });
  await everyEngineReady(gateway.url);
}, 330_000);
afterAll(async () => {
  await Promise.all([gateway?.stop(), stuck?.stop()]);
});

type Answer = Record<string, unknown> & { usage: Record<string, unknown>; _meta: Record<string, unknown> };

/** The answer apart from timings, the trace id, and a cursor's signature and expiry (its position is kept). */
function comparable(answer: Answer): unknown {
  const { latencyMs: _latency, ...usage } = answer.usage;
  const { traceId: _trace, ...meta } = answer._meta;
  const cursor = typeof answer.nextCursor === 'string' ? fusedCursorPosition(answer.nextCursor) : undefined;
  return JSON.stringify({ ...answer, usage, _meta: meta, nextCursor: cursor });
}

interface Report {
  experiments: Array<{
    shadow?: { pairs: number; skipped: { budget: number; concurrency: number }; shadowErrors: number; primaryErrors: number };
  }>;
}

describe('shadow experiment through gateway processes', () => {
  it('answers as without the experiment while the shadow hangs, and stays within its budget', async () => {
    for (const [i, query] of QUERIES.entries()) {
      const params = { query: query.text, k: 10 };
      const plain = await rpc<Answer>(gateway.url, 'retrieve', params);
      const shadowed = await rpc<Answer>(gateway.url, 'retrieve', params, { headers: { 'x-rcpgw-user': `user-${i}` } });
      expect(shadowed.result, `query ${query.id}`).toBeDefined();
      expect(comparable(shadowed.result!)).toBe(comparable(plain.result!));
    }
    // Every sampled request either ran its shadow (which timed out) or was refused by the gates.
    const report = await waitUntil('every shadow accounted for', async () => {
      const r = (await rpc<Report>(gateway.url, 'x-rcpgw/experiments', {})).result!.experiments[0]!.shadow;
      return r && r.pairs + r.skipped.budget + r.skipped.concurrency === QUERIES.length ? r : undefined;
    });
    // A pair is counted when the shadow call ends at its deadline, not when the engine logs the
    // request, which a busy engine may do later: wait until it has logged as many as were counted.
    const shadowRequests = () => readEvents(stuck.eventsFile).filter((e) => e.ev === 'request' && e.method === 'retrieve');
    await waitUntil('the shadow engine to log its calls', () => shadowRequests().length >= report.pairs);
    const shadowCalls = shadowRequests();
    console.log(
      `shadow: ${report.pairs} pairs, skipped ${JSON.stringify(report.skipped)}, ${shadowCalls.length} calls to the shadow engine`,
    );
    expect(shadowCalls.length).toBeLessThanOrEqual(BUDGET);
    expect(shadowCalls.length).toBe(report.pairs);
    expect(report.pairs).toBeGreaterThan(0);
    expect(report.shadowErrors).toBe(report.pairs);
    expect(report.primaryErrors).toBe(0);
    // The gateway appends comparisons through a write stream, so a line may reach the file after
    // its pair was counted: wait for as many complete lines as pairs.
    const comparisons = (): string[] => {
      const text = existsSync(comparisonsFile) ? readFileSync(comparisonsFile, 'utf8') : '';
      return text.split('\n').slice(0, -1); // the part after the last newline is empty or still being written
    };
    await waitUntil('the comparison lines to be written', () => comparisons().length >= report.pairs);
    const lines = comparisons().map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(lines).toHaveLength(report.pairs);
    expect(lines[0]).toMatchObject({ experiment: 'stuck-shadow', primary: 'fused', shadow: 'stuck', shadowError: true, k: 10 });
    const metrics = await (await fetch(new URL('/metrics', gateway.url))).text();
    expect(metrics).toMatch(new RegExp(`rcpgw_experiment_shadow_pairs_total\\{experiment="stuck-shadow"\\} ${report.pairs}`));
  }, 120_000);
});
