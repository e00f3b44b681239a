/**
 * The request line written by hand (src/node/observability/request-line-writer.ts) must be the
 * line pino writes for `logger.info(line, 'request')`, byte for byte, for every shape a line
 * takes; and where the two could differ (a lone surrogate, which pino passes through raw) it
 * must stay valid JSON meaning the same thing.
 */
import pino from 'pino';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { RequestLine } from '../../src/core/observability/request-log.js';
import { RequestLineWriter } from '../../src/node/observability/request-line-writer.js';
import { isoTime } from '../../src/node/observability/log.js';

/** A logger as createLogger makes it (base binding, ISO time), writing into an array; the clock is fixed. */
function capture(options: pino.LoggerOptions = {}): { logger: pino.Logger; lines: string[] } {
  const lines: string[] = [];
  const logger = pino(
    { level: 'info', base: { svc: 'rcp-gateway' }, timestamp: () => ',"time":"2026-12-02T05:00:00.000Z"', ...options },
    { write: (line: string) => lines.push(line) },
  );
  return { logger, lines };
}

/** One line through the writer, written at once. */
function writeRequestLine(logger: pino.Logger, line: RequestLine): void {
  const writer = new RequestLineWriter(logger);
  writer.add(() => line);
  writer.flush();
}

const LINES: RequestLine[] = [
  {
    method: 'retrieve',
    id: 1,
    transport: 'http',
    code: 0,
    outcome: 'ok',
    latencyMs: 2.3,
    engines: ['e0'],
    traceId: 'a'.repeat(32),
    deadlineMs: 10_000,
  },
  {
    method: 'retrieve',
    id: 'req "quoted" \\ back\nslash',
    code: 0,
    outcome: 'degraded',
    latencyMs: 0,
    engines: ['web', 'local'],
    degraded: [{ engine: 'slow', reason: 'timeout', code: -32014 }],
    abort: 'deadline',
    query: 'fusion — ünïcode \u2028 and \t tabs and a 🚀',
  },
  {
    method: 'embed',
    id: null,
    code: -32010,
    outcome: 'error',
    latencyMs: 12.5,
    engines: [],
    error: {
      code: -32010,
      reason: 'all-failed',
      retryable: true,
      engines: [{ engine: 'a', reason: null }],
      message: 'every engine failed',
    },
  },
  { method: 'x-vendor/thing', id: 'x'.repeat(129), code: -32601, outcome: 'error', latencyMs: Number.NaN, engines: [] },
];

describe('the hand-written request line', () => {
  it.each(LINES.map((line, i) => [i, line] as const))('equals pino’s own line (shape %i)', (_i, line) => {
    const byPino = capture();
    byPino.logger.info(line, 'request');
    const byHand = capture();
    writeRequestLine(byHand.logger, line);
    expect(byHand.lines).toEqual(byPino.lines);
    expect(byHand.lines[0]!.endsWith('"msg":"request"}\n')).toBe(true);
  });

  it('follows the logger: its bindings, time function and message key', () => {
    const byPino = capture({ messageKey: 'message', timestamp: false });
    const child = byPino.logger.child({ worker: 2 });
    child.info(LINES[0]!, 'request');
    const byHand = capture({ messageKey: 'message', timestamp: false });
    writeRequestLine(byHand.logger.child({ worker: 2 }), LINES[0]!);
    expect(byHand.lines).toEqual(byPino.lines);
  });

  it('keeps a lone surrogate valid JSON (pino would pass it through raw)', () => {
    const { logger, lines } = capture();
    writeRequestLine(logger, { ...LINES[0]!, id: 'bad \ud800 id' });
    expect(JSON.parse(lines[0]!).id).toBe('bad \ud800 id');
    expect(lines[0]).toContain('\\ud800');
  });

  it('hands the line to pino when the destination wants per-line metadata (multistream)', () => {
    const lines: string[] = [];
    const logger = pino(
      { level: 'info', base: { svc: 'rcp-gateway' } },
      pino.multistream([{ stream: { write: (l: string) => lines.push(l) } }]),
    );
    writeRequestLine(logger, LINES[0]!);
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0]!)).toMatchObject({ level: 30, svc: 'rcp-gateway', method: 'retrieve', msg: 'request' });
  });
});

describe('a turn at a time', () => {
  it('builds each line when queued, writes the turn’s lines in one write, in order, each stamped when it was queued, by the end of the turn', async () => {
    const writes: string[] = [];
    let clock = 0;
    const logger = pino(
      { level: 'info', base: { svc: 'rcp-gateway' }, timestamp: () => `,"time":${++clock}` },
      { write: (text: string) => writes.push(text) },
    );
    clock = 0; // pino may read the time function once as it is made
    const writer = new RequestLineWriter(logger);
    const built: number[] = [];
    LINES.forEach((line, i) =>
      writer.add(() => {
        built.push(i);
        return line;
      }),
    );
    expect(writes).toHaveLength(0); // nothing written inside the turn that finished the requests
    // Built at once, so the queue holds the small lines, not what they were built from (the finished requests).
    expect(built).toEqual([0, 1, 2, 3]);
    await new Promise((resolve) => setImmediate(resolve));
    expect(writes).toHaveLength(1);
    expect(built).toEqual([0, 1, 2, 3]); // and not built again when written
    const lines = writes[0]!.split('\n').slice(0, -1);
    expect(lines).toHaveLength(LINES.length);
    lines.forEach((text, i) => {
      const byPino = capture({ timestamp: () => `,"time":${i + 1}` });
      byPino.logger.info(LINES[i]!, 'request');
      expect(`${text}\n`).toBe(byPino.lines[0]);
    });
    writer.flush(); // an empty queue writes nothing
    expect(writes).toHaveLength(1);
  });

  it("drops a line that cannot be built or serialised with a warning, and writes the turn's others", async () => {
    const { logger, lines } = capture();
    const writer = new RequestLineWriter(logger);
    writer.add(() => LINES[0]!);
    writer.add(() => {
      throw new Error('no line for this one');
    });
    writer.add(() => ({ ...LINES[0]!, id: 7, error: { big: 1n } as never }));
    writer.add(() => LINES[2]!);
    await new Promise((resolve) => setImmediate(resolve));
    const parsed = lines.flatMap((text) => text.split('\n').filter(Boolean)).map((text) => JSON.parse(text) as Record<string, unknown>);
    expect(parsed.filter((line) => line.msg === 'request').map((line) => line.method)).toEqual(['retrieve', 'embed']);
    const warnings = parsed.filter((line) => line.level === 40);
    expect(warnings).toHaveLength(2);
    expect(warnings[0]).toMatchObject({ msg: 'request line dropped: it could not be built', reason: 'no line for this one' });
  });

  it('writes what is queued when flushed (shutdown), and a later turn starts a new batch', async () => {
    const { logger, lines } = capture();
    const writer = new RequestLineWriter(logger);
    writer.add(() => LINES[0]!);
    writer.flush();
    expect(lines).toHaveLength(1);
    writer.add(() => LINES[2]!);
    await new Promise((resolve) => setImmediate(resolve));
    expect(lines).toHaveLength(2);
    expect(JSON.parse(lines[1]!)).toMatchObject({ method: 'embed', code: -32010 });
  });
});

describe('the log time (isoTime, made once per millisecond from a prefix made once per second)', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it("is pino's isoTime at every millisecond, including when the clock moves on or back, across seconds, before 1970 and past year 9999", () => {
    vi.useFakeTimers();
    for (const at of [
      0, 1_764_658_800_000, 1_764_658_800_000, 1_764_658_800_001, 1_764_658_800_999, 1_764_658_801_000, 1_764_658_800_500,
      4_102_444_800_000, 1_764_658_801_999, 1_764_658_802_000, 1_764_658_799_999, -1, -1_000, -1_001, 253_402_300_800_000,
    ]) {
      vi.setSystemTime(at);
      expect(isoTime()).toBe(pino.stdTimeFunctions.isoTime());
    }
  });
});
