/**
 * Writes the one info line per request (core/observability/request-log.ts) as the line pino
 * itself would write for `logger.info(line, 'request')` — same level, time, bindings, fields
 * and message, in the same order — but serialised in one `JSON.stringify` of the plain line
 * instead of pino's generic per-key walk. Under load that walk made the line about a sixth of
 * the gateway's CPU per request; this way it is a third of that (docs/performance.md,
 * "The request line"). The line's fields are a fixed set of numbers, short strings and small
 * arrays (never headers, env or secrets), which is why it needs no redaction and no serializers.
 *
 * Lines are written a turn of the event loop at a time: a finished request's line (a small
 * object) is queued with its finish time, and the queue becomes text and one write to the
 * destination at the turn's end (setImmediate). Serialised one request at a time, interleaved with
 * the rest of each request's work, the line cost more under load than the same code run in one pass
 * over a turn's requests (docs/performance.md, "The request line, a turn at a time"). The destination buffers and writes
 * asynchronously anyway (log.ts), so no line leaves later than it would have.
 *
 * It reads the logger's level value, time function, bindings and destination through
 * `pino.symbols`, pino's published handles for this; a destination that wants per-line metadata
 * (pino.multistream) gets each line through `logger.info` instead.
 */
import pino from 'pino';
import type { RequestLine } from '../../core/observability/request-log.js';
import type { Logger } from './log.js';

const { streamSym, timeSym, chindingsSym, messageKeySym, needsMetadataGsym } = pino.symbols;

/** A logger's value under one of `pino.symbols` (typed there only as `symbol`). */
function held<T>(target: object, key: symbol): T {
  return Reflect.get(target, key) as T;
}

/** A finished request, as queued: its line, and when it finished (pino's time text). */
interface QueuedLine {
  line: RequestLine;
  time: string;
}

export class RequestLineWriter {
  private queued: QueuedLine[] = [];

  constructor(private readonly logger: Logger) {}

  /**
   * Queue a request's line, built now: the queue then holds a dozen small fields until the turn's
   * end, not the finished request and its whole answer (which a deferred build would keep alive,
   * and a scavenge in between would copy). The text is still made once per turn.
   */
  add(build: () => RequestLine): void {
    const line = guarded(build, this.logger);
    if (line === undefined) return;
    this.queued.push({ line, time: held<() => string>(this.logger, timeSym)() });
    if (this.queued.length === 1) setImmediate(this.flush);
  }

  /** Write every queued line now (also run at the end of each turn that queued one). */
  readonly flush = (): void => {
    if (this.queued.length === 0) return;
    const queued = this.queued;
    this.queued = [];
    const { logger } = this;
    const stream = held<{ write(text: string): unknown }>(logger, streamSym);
    if (held<boolean | undefined>(stream, needsMetadataGsym)) {
      for (const entry of queued) logger.info(entry.line, 'request');
      return;
    }
    // `{"level":30,"time":"…"` + bindings + `,<fields>` + `,"msg":"request"}`: pino's order.
    const level = `{"level":${logger.levels.values.info}`;
    const bindings = held<string>(logger, chindingsSym);
    const message = `,${JSON.stringify(held<string>(logger, messageKeySym))}:"request"}\n`;
    let text = '';
    for (const entry of queued) {
      const fields = guarded(() => JSON.stringify(entry.line).slice(1, -1), logger);
      if (fields !== undefined) text += `${level}${entry.time}${bindings}${fields ? `,${fields}` : ''}${message}`;
    }
    if (text) stream.write(text);
  };
}

/**
 * A line that cannot be built or serialised is dropped with a warning, never thrown: not into the
 * session's finish (the client's answer is on its way out, and an observer must not change it), and
 * not at the end of a turn (setImmediate), where it would end the process and the turn's other
 * lines with it.
 */
function guarded<T>(build: () => T, logger: Logger): T | undefined {
  try {
    return build();
  } catch (err) {
    logger.warn({ reason: err instanceof Error ? err.message : String(err) }, 'request line dropped: it could not be built');
    return undefined;
  }
}
