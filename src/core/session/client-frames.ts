/**
 * The notifications one request may send its client before the answer: `notifications/progress`
 * when the request carries a progress token (§9) and `notifications/log` when the client opted
 * into logs (§17.1). Neither is sent once the request has been answered (§9).
 */
import { shallowCopy } from '../protocol/copy.js';
import { notification, type JsonObject, type NotificationMessage } from '../protocol/jsonrpc.js';
import type { RequestMeta } from '../protocol/params.js';
import type { LogEntry, LogLevel, ProgressUpdate } from '../service/contract.js';

/** Where a request's notifications go (stdio line, SSE frame). `undefined` = transport cannot stream. */
export type FrameSink = (frame: NotificationMessage) => void;

const LOG_RANK: Record<LogLevel, number> = { debug: 0, info: 1, notice: 2, warning: 3, error: 4 };

interface Answered {
  readonly answered: boolean;
}

export function progressFrames(
  meta: RequestMeta,
  sink: FrameSink | undefined,
  request: Answered,
): ((update: ProgressUpdate) => void) | undefined {
  const token = meta.progressToken;
  if (token === undefined || !sink) return undefined;
  return (update) => {
    if (request.answered) return; // §9: nothing after the final response
    sink(notification('notifications/progress', { progressToken: token, ...update }));
  };
}

/** The session's log preferences: from `initialize` (stateful) or the request's `_meta.logLevel`. */
export interface LogPreference {
  clientWantsLogs: boolean;
  level: LogLevel;
}

export function logFrames(
  meta: RequestMeta,
  sink: FrameSink | undefined,
  request: Answered,
  preference: LogPreference,
): ((entry: LogEntry) => void) | undefined {
  if (!sink || !(preference.clientWantsLogs || meta.logLevel !== undefined)) return undefined;
  const minLevel = LOG_RANK[meta.logLevel ?? preference.level];
  const token = meta.progressToken;
  return (entry) => {
    if (request.answered || LOG_RANK[entry.level] < minLevel) return;
    const params: JsonObject = shallowCopy(entry) as JsonObject; // then extended: protocol/copy.ts
    if (token !== undefined) params._meta = { progressToken: token };
    sink(notification('notifications/log', params));
  };
}
