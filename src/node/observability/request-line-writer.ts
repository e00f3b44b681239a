/**
 * Writes the one info line per request (core/observability/request-log.ts) as the line pino
 * itself would write for `logger.info(line, 'request')` — same level, time, bindings, fields
 * and message, in the same order — but serialised in one `JSON.stringify` of the plain line
 * instead of pino's generic per-key walk. Under load that walk made the line about a sixth of
 * the gateway's CPU per request; this way it is a third of that (docs/performance.md,
 * "The request line"). The line's fields are a fixed set of numbers, short strings and small
 * arrays (never headers, env or secrets), which is why it needs no redaction and no serializers.
 *
 * It reads the logger's level value, time function, bindings and destination through
 * `pino.symbols`, pino's published handles for this; a destination that wants per-line metadata
 * (pino.multistream) gets the line through `logger.info` instead.
 */
import pino from 'pino';
import type { RequestLine } from '../../core/observability/request-log.js';
import type { Logger } from './log.js';

const { streamSym, timeSym, chindingsSym, messageKeySym, needsMetadataGsym } = pino.symbols;

/** A logger's value under one of `pino.symbols` (typed there only as `symbol`). */
function held<T>(target: object, key: symbol): T {
  return Reflect.get(target, key) as T;
}

export function writeRequestLine(logger: Logger, line: RequestLine): void {
  const stream = held<{ write(line: string): unknown }>(logger, streamSym);
  if (held<boolean | undefined>(stream, needsMetadataGsym)) {
    logger.info(line, 'request');
    return;
  }
  const time = held<() => string>(logger, timeSym)();
  const bindings = held<string>(logger, chindingsSym);
  const messageKey = JSON.stringify(held<string>(logger, messageKeySym));
  const fields = JSON.stringify(line).slice(1, -1);
  // `{"level":30,"time":"…"` + bindings + `,<fields>` + `,"msg":"request"}`: pino's order.
  stream.write(`{"level":${logger.levels.values.info}${time}${bindings}${fields ? `,${fields}` : ''},${messageKey}:"request"}\n`);
}
