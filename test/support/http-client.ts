/**
 * Minimal RCP-over-HTTP client for tests (spec §5.2). Every JSON-RPC frame it
 * parses is handed to the spec-validator collector (unless `validate:false`),
 * so a suite can assert at the end that everything the server emitted was valid.
 */
import { createParser } from 'eventsource-parser';
import { fetch } from 'undici';
import { recordEmitted } from './spec-validator.js';

export type RequestId = string | number;
export interface RpcErrorObject {
  code: number;
  message: string;
  data?: unknown;
}
/** A parsed JSON-RPC response (fields are whatever the server sent). */
export interface JsonRpcResponse<R = Record<string, unknown>> {
  jsonrpc?: unknown;
  id?: RequestId | null;
  result?: R;
  error?: RpcErrorObject;
}
/** `rpc()` reply: the JSON-RPC response plus its HTTP envelope. */
export interface RpcReply<R = Record<string, unknown>> extends JsonRpcResponse<R> {
  status: number;
  headers: Record<string, string>;
  /** The whole parsed body (equals the response object for a single request). */
  body: unknown;
}
export interface RpcOptions {
  id?: RequestId;
  headers?: Record<string, string>;
  signal?: AbortSignal;
  /** Record frames with the spec validator (default true). */
  validate?: boolean;
}
export interface RawReply {
  status: number;
  headers: Record<string, string>;
  text: string;
}
export interface SseOptions extends RpcOptions {
  /** Injected as params._meta.progressToken when params carry none. */
  progressToken?: string | number;
  /** Called with every parsed data frame, in arrival order (e.g. to abort mid-stream). */
  onFrame?: (frame: unknown) => void;
}
export interface SseReply {
  status: number;
  headers: Record<string, string>;
  contentType: string;
  /** Every parsed `data:` payload in arrival order (the final response included). */
  frames: unknown[];
  /** The `notifications/progress` frames only. */
  progress: Array<{ progressToken: unknown; progress?: number; stage?: string; message?: string }>;
  /** The frame carrying the request id (result or error), or undefined if none arrived. */
  final: JsonRpcResponse | undefined;
  comments: number;
  /** `data:` payloads that were not JSON, plus parser errors. */
  parseErrors: string[];
  /** Frames that arrived after the final one (spec: the stream ends after it). */
  framesAfterFinal: number;
  /** True when `signal` aborted the stream before it ended. */
  aborted: boolean;
}

let nextId = 1;
const isRecord = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);
const headersObject = (h: { forEach(cb: (value: string, key: string) => void): void }): Record<string, string> => {
  const out: Record<string, string> = {};
  h.forEach((value, key) => {
    out[key] = value;
  });
  return out;
};
/** `http://host:port/rcp` + `retrieve` → `http://host:port/rcp/retrieve`. */
export function methodUrl(baseUrl: string, method: string): string {
  return `${baseUrl.replace(/\/+$/, '')}/${method}`;
}
function requestBody(method: string, params: unknown, id: RequestId): string {
  return JSON.stringify({ jsonrpc: '2.0', id, method, params });
}

/** POST an arbitrary body; no parsing, no validation. */
export async function rpcRaw(url: string, body: string, headers: Record<string, string> = {}, signal?: AbortSignal): Promise<RawReply> {
  const res = await fetch(url, { method: 'POST', body, headers: { 'content-type': 'application/json', ...headers }, signal });
  return { status: res.status, headers: headersObject(res.headers), text: await res.text() };
}

/** One JSON-RPC call over HTTP; returns the parsed response with status/headers. */
export async function rpc<R = Record<string, unknown>>(
  baseUrl: string,
  method: string,
  params: unknown = {},
  opts: RpcOptions = {},
): Promise<RpcReply<R>> {
  const id = opts.id ?? nextId++;
  const raw = await rpcRaw(methodUrl(baseUrl, method), requestBody(method, params, id), opts.headers, opts.signal);
  let body: unknown;
  try {
    body = raw.text === '' ? undefined : JSON.parse(raw.text);
  } catch {
    throw new Error(`rpc ${method}: HTTP ${raw.status} body is not JSON: ${raw.text.slice(0, 200)}`);
  }
  if (opts.validate !== false && body !== undefined) recordEmitted(body, method);
  const r: JsonRpcResponse<R> = isRecord(body) ? (body as JsonRpcResponse<R>) : {};
  return { ...r, status: raw.status, headers: raw.headers, body };
}

/**
 * A call with `Accept: text/event-stream`, parsed the way a browser EventSource
 * would (eventsource-parser). Falls back to a buffered JSON body when the server
 * answers `application/json` (it may: SSE is optional, §5.2).
 */
export async function rpcSse(
  baseUrl: string,
  method: string,
  params: Record<string, unknown> = {},
  opts: SseOptions = {},
): Promise<SseReply> {
  const id = opts.id ?? nextId++;
  let p = params;
  const meta = isRecord(params._meta) ? params._meta : {};
  if (opts.progressToken !== undefined && meta.progressToken === undefined) {
    p = { ...params, _meta: { ...meta, progressToken: opts.progressToken } };
  }
  const res = await fetch(methodUrl(baseUrl, method), {
    method: 'POST',
    body: requestBody(method, p, id),
    headers: { 'content-type': 'application/json', accept: 'text/event-stream', ...opts.headers },
    signal: opts.signal,
  });
  const reply: SseReply = {
    status: res.status,
    headers: headersObject(res.headers),
    contentType: res.headers.get('content-type') ?? '',
    frames: [],
    progress: [],
    final: undefined,
    comments: 0,
    parseErrors: [],
    framesAfterFinal: 0,
    aborted: false,
  };
  const take = (frame: unknown): void => {
    reply.frames.push(frame);
    if (reply.final !== undefined) reply.framesAfterFinal++;
    const isResponse = isRecord(frame) && ('result' in frame || 'error' in frame);
    if (opts.validate !== false) recordEmitted(frame, isResponse ? method : undefined);
    if (isResponse && reply.final === undefined) reply.final = frame as JsonRpcResponse;
    else if (isRecord(frame) && frame.method === 'notifications/progress' && isRecord(frame.params)) {
      reply.progress.push(frame.params as SseReply['progress'][number]);
    }
    opts.onFrame?.(frame);
  };

  if (!reply.contentType.includes('text/event-stream')) {
    const text = await res.text();
    try {
      take(JSON.parse(text));
    } catch {
      reply.parseErrors.push(`non-JSON body: ${text.slice(0, 200)}`);
    }
    return reply;
  }
  const parser = createParser({
    onEvent: (ev) => {
      try {
        take(JSON.parse(ev.data));
      } catch {
        reply.parseErrors.push(`non-JSON data: ${ev.data.slice(0, 200)}`);
      }
    },
    onComment: () => {
      reply.comments++;
    },
    onError: (err) => {
      reply.parseErrors.push(`sse parse error: ${err.message}`);
    },
  });
  const decoder = new TextDecoder();
  try {
    if (res.body) {
      for await (const chunk of res.body) parser.feed(decoder.decode(chunk as Uint8Array, { stream: true }));
    }
    parser.feed(decoder.decode());
  } catch (err) {
    if (opts.signal?.aborted) reply.aborted = true;
    else throw err;
  }
  return reply;
}
