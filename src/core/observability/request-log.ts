/**
 * The one info line per request: method, outcome, latency, engines used, degraded list, request
 * id, trace id. Built from the answer that actually left (FinishedInfo.response), so a cancel or
 * deadline answered by the session is logged as what the client got. Never query text or hit
 * bodies unless `gateway.logQueries` is on; never headers.
 */
import { isJsonObject, type JsonObject, type RequestId } from '../protocol/jsonrpc.js';
import type { FinishedInfo } from '../session/session.js';

export interface DegradedLeg {
  engine: string;
  reason: string;
  code?: number;
}

export interface RequestLine {
  method: string;
  id: RequestId | null;
  transport?: string | undefined;
  code: number;
  outcome: 'ok' | 'degraded' | 'error';
  latencyMs: number;
  engines: string[];
  degraded?: DegradedLeg[];
  traceId?: string;
  abort?: string;
  deadlineMs?: number;
  error?: JsonObject;
  query?: string;
}

const MAX_ID_CHARS = 128;
const MAX_QUERY_CHARS = 1_000;

/** Engines that answered: `_meta.engines` (federated) or `_meta.engine` (routed). */
function enginesOf(result: JsonObject | undefined): string[] {
  const meta = result && isJsonObject(result._meta) ? result._meta : undefined;
  if (!meta) return [];
  if (Array.isArray(meta.engines)) return meta.engines.filter((e): e is string => typeof e === 'string');
  return typeof meta.engine === 'string' ? [meta.engine] : [];
}

/** `_meta.degraded` of a successful answer, as {engine, reason, code}. */
export function degradedOf(result: JsonObject | undefined): DegradedLeg[] {
  const meta = result && isJsonObject(result._meta) ? result._meta : undefined;
  if (!meta || !Array.isArray(meta.degraded)) return [];
  const out: DegradedLeg[] = [];
  for (const entry of meta.degraded) {
    if (!isJsonObject(entry) || typeof entry.engine !== 'string') continue;
    out.push({
      engine: entry.engine,
      reason: typeof entry.reason === 'string' ? entry.reason : 'unknown',
      ...(typeof entry.code === 'number' ? { code: entry.code } : {}),
    });
  }
  return out;
}

/** A loggable rendering of the query (string as is; structured queries as compact JSON), capped. */
export function queryText(params: JsonObject): string | undefined {
  const query = params.query;
  if (query === undefined) return undefined;
  const text = typeof query === 'string' ? query : JSON.stringify(query);
  return text.length > MAX_QUERY_CHARS ? `${text.slice(0, MAX_QUERY_CHARS)}…` : text;
}

/** `extra.degraded`: the answer's degraded legs when the caller has read them already (`degradedOf`). */
export function requestLine(info: FinishedInfo, extra: { query?: string; logQueries: boolean; degraded?: DegradedLeg[] }): RequestLine {
  const { response } = info;
  const id = typeof response.id === 'string' && response.id.length > MAX_ID_CHARS ? `${response.id.slice(0, MAX_ID_CHARS)}…` : response.id;
  const result = 'result' in response ? response.result : undefined;
  const degraded = extra.degraded ?? degradedOf(result);
  const line: RequestLine = {
    method: info.method,
    id,
    // Absent (undefined, never written) for a request answered before it had a context.
    transport: info.ctx?.transport,
    code: info.code,
    outcome: info.code !== 0 ? 'error' : degraded.length > 0 ? 'degraded' : 'ok',
    latencyMs: Math.round(info.durationMs * 10) / 10,
    engines: enginesOf(result),
  };
  if (degraded.length > 0) line.degraded = degraded;
  if (info.ctx) line.traceId = info.ctx.trace.traceId;
  if (info.abortReason) line.abort = info.abortReason;
  if (info.ctx) line.deadlineMs = info.ctx.deadlineMs;
  if ('error' in response) line.error = errorSummary(response.error, extra.logQueries);
  if (extra.logQueries && extra.query !== undefined) line.query = extra.query;
  return line;
}

/**
 * The structural parts of an error (reason, engine, field, option, degraded engines). The message
 * is kept only when it is the gateway's own: an engine's message may echo the query back.
 */
function errorSummary(error: { code: number; message: string; data?: unknown }, logQueries: boolean): JsonObject {
  const out: JsonObject = { code: error.code };
  const data = isJsonObject(error.data) ? error.data : undefined;
  for (const key of ['reason', 'engine', 'field', 'option', 'retryable'] as const) {
    const value = data?.[key];
    if (typeof value === 'string' || typeof value === 'boolean') out[key] = value;
  }
  if (data && Array.isArray(data.engines)) {
    // Strings only: the line names engines and reasons, it does not carry whatever an error's data held.
    const text = (value: unknown): string | null => (typeof value === 'string' ? value : null);
    out.engines = data.engines.filter(isJsonObject).map((e) => ({ engine: text(e.engine), reason: text(e.reason) }));
  }
  if (logQueries || data?.engine === undefined) out.message = error.message.slice(0, 300);
  return out;
}
