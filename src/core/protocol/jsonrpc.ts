/**
 * JSON-RPC 2.0 message shapes and classification (§4). Pure: no I/O.
 */
import { ErrorCode, type WireError } from './errors.js';
import { isWellFormedMethodName } from './methods.js';

export type RequestId = string | number;
export type JsonObject = Record<string, unknown>;

export interface RequestMessage {
  jsonrpc: '2.0';
  id: RequestId;
  method: string;
  params: JsonObject;
}

export interface NotificationMessage {
  jsonrpc: '2.0';
  method: string;
  params: JsonObject;
}

export interface SuccessResponse {
  jsonrpc: '2.0';
  id: RequestId;
  result: JsonObject;
}

export interface ErrorResponse {
  jsonrpc: '2.0';
  id: RequestId | null;
  error: WireError;
}

export type ResponseMessage = SuccessResponse | ErrorResponse;

export type Classified =
  | { kind: 'request'; message: RequestMessage }
  | { kind: 'notification'; message: NotificationMessage }
  | { kind: 'response'; message: ResponseMessage }
  /** Not a valid message; `id` is the recovered id when one could be read (§11: else null). */
  | { kind: 'invalid'; id: RequestId | null; reason: string };

export function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * §4.7 ids: a string, or a number the gateway can echo exactly. An integer beyond 2^53 has
 * already lost precision in parsing, so echoing it would answer a different id: refused.
 */
function isValidId(value: unknown): value is RequestId {
  if (typeof value === 'string') return true;
  if (typeof value !== 'number' || !Number.isFinite(value)) return false;
  return Number.isInteger(value) ? Number.isSafeInteger(value) : true;
}

/**
 * Classify one decoded JSON value (not a batch). `allowCompact` accepts the §5.3
 * `{method, params}` envelope as a request with a synthetic id supplied by the caller.
 */
export function classify(value: unknown): Classified {
  if (!isJsonObject(value)) return { kind: 'invalid', id: null, reason: 'message must be a JSON object' };
  const rawId = value.id;
  const hasId = 'id' in value && rawId !== undefined;
  const recoveredId = isValidId(rawId) ? rawId : null;
  if (value.jsonrpc !== '2.0') return { kind: 'invalid', id: recoveredId, reason: 'jsonrpc must be "2.0"' };

  if ('result' in value || 'error' in value) {
    if (!hasId) return { kind: 'invalid', id: null, reason: 'response without id' };
    return { kind: 'response', message: value as unknown as ResponseMessage };
  }

  if (typeof value.method !== 'string' || value.method.length === 0) {
    return { kind: 'invalid', id: recoveredId, reason: 'method must be a non-empty string' };
  }
  // §4.1: params MUST be an object; absent is tolerated as {} (null = absent, §4.6).
  let params: JsonObject;
  if (value.params === undefined || value.params === null) params = {};
  else if (isJsonObject(value.params)) params = value.params;
  else return { kind: 'invalid', id: recoveredId, reason: 'params must be an object' };

  if (!hasId) return { kind: 'notification', message: { jsonrpc: '2.0', method: value.method, params } };
  // §4.7: a request id MUST be a string or number, never null (and a number that survives parsing).
  if (!isValidId(rawId)) return { kind: 'invalid', id: null, reason: 'id must be a string or a number within ±2^53' };
  if (!isWellFormedMethodName(value.method)) {
    return { kind: 'invalid', id: rawId, reason: 'method name is not well formed (segments of [a-z0-9-], §4.1)' };
  }
  return { kind: 'request', message: { jsonrpc: '2.0', id: rawId, method: value.method, params } };
}

export function successResponse(id: RequestId, result: JsonObject): SuccessResponse {
  return { jsonrpc: '2.0', id, result };
}

export function errorResponse(id: RequestId | null, error: WireError): ErrorResponse {
  return { jsonrpc: '2.0', id, error };
}

export function invalidRequest(id: RequestId | null, detail: string): ErrorResponse {
  return errorResponse(id, { code: ErrorCode.InvalidRequest, message: `invalid request: ${detail}`, data: { detail } });
}

export function parseErrorResponse(detail: string): ErrorResponse {
  return errorResponse(null, { code: ErrorCode.ParseError, message: 'parse error', data: { detail } });
}

export function notification(method: string, params: JsonObject): NotificationMessage {
  return { jsonrpc: '2.0', method, params };
}
