/**
 * The one info line per request (src/core/observability/request-log.ts): what an error's summary
 * keeps. Only strings name engines and reasons; an error's data is not copied into the log.
 */
import { describe, expect, it } from 'vitest';
import { requestLine } from '../../src/core/observability/request-log.js';
import type { FinishedInfo } from '../../src/core/session/session-options.js';

function failed(data: unknown): FinishedInfo {
  return {
    method: 'retrieve',
    code: -32010,
    durationMs: 3.14159,
    abortReason: undefined,
    response: { jsonrpc: '2.0', id: 7, error: { code: -32010, message: 'every engine failed', data } },
  } as FinishedInfo;
}

describe('the request line of an error', () => {
  it('keeps the engines and reasons that are strings, and nothing else of them', () => {
    const line = requestLine(
      failed({
        reason: 'all-failed',
        retryable: true,
        engines: [
          { engine: 'a', reason: 'timeout' },
          { engine: { nested: 'x'.repeat(10_000) }, reason: ['not', 'a', 'string'] },
          'not an object',
        ],
      }),
      { logQueries: false },
    );
    expect(line).toMatchObject({ method: 'retrieve', id: 7, code: -32010, outcome: 'error', latencyMs: 3.1 });
    expect(line.error).toEqual({
      code: -32010,
      reason: 'all-failed',
      retryable: true,
      engines: [
        { engine: 'a', reason: 'timeout' },
        { engine: null, reason: null },
      ],
      message: 'every engine failed',
    });
    expect(JSON.stringify(line).length).toBeLessThan(400);
  });

  it("drops an engine's own message unless queries are logged (it may echo the query)", () => {
    const info = failed({ engine: 'web', reason: 'engine-error' });
    expect(requestLine(info, { logQueries: false }).error).toEqual({ code: -32010, engine: 'web', reason: 'engine-error' });
    expect(requestLine(info, { logQueries: true }).error).toMatchObject({ message: 'every engine failed' });
  });
});
