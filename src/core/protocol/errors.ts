/**
 * RCP error codes (§12) and the one error type the gateway throws internally.
 * Local failures carry a stable string `reason`; mapping to wire codes happens here only.
 */

export const ErrorCode = {
  ParseError: -32700,
  InvalidRequest: -32600,
  MethodNotFound: -32601,
  InvalidParams: -32602,
  InternalError: -32603,
  NotInitialized: -32001,
  VersionMismatch: -32002,
  CapabilityMissing: -32003,
  UnknownMethod: -32004,
  OptionUnsupported: -32005,
  Cancelled: -32006,
  BackendUnavailable: -32010,
  RateLimited: -32011,
  Unauthorized: -32012,
  PayloadTooLarge: -32013,
  Timeout: -32014,
  NotFound: -32015,
  Conflict: -32016,
} as const;

/** §12.1 conventional `error.data` fields (all optional; extra keys allowed). */
export interface ErrorData {
  field?: string;
  option?: string;
  retryable?: boolean;
  retryAfterMs?: number;
  detail?: string;
  [key: string]: unknown;
}

export interface WireError {
  code: number;
  message: string;
  data?: ErrorData;
}

const DEFAULT_MESSAGES: Record<number, string> = {
  [-32700]: 'parse error',
  [-32600]: 'invalid request',
  [-32601]: 'method not found',
  [-32602]: 'invalid params',
  [-32603]: 'internal error',
  [-32001]: 'not initialized',
  [-32002]: 'version mismatch',
  [-32003]: 'capability missing',
  [-32004]: 'unknown method',
  [-32005]: 'option unsupported',
  [-32006]: 'cancelled',
  [-32010]: 'backend unavailable',
  [-32011]: 'rate limited',
  [-32012]: 'unauthorized',
  [-32013]: 'payload too large',
  [-32014]: 'timeout',
  [-32015]: 'not found',
  [-32016]: 'conflict',
};

/** §12.2: codes an identical retry might fix. */
const RETRYABLE = new Set<number>([ErrorCode.RateLimited, ErrorCode.BackendUnavailable, ErrorCode.InternalError, ErrorCode.Timeout]);

export function isRetryableCode(code: number): boolean {
  return RETRYABLE.has(code);
}

export class RcpError extends Error {
  readonly code: number;
  readonly data: ErrorData | undefined;

  constructor(code: number, message?: string, data?: ErrorData) {
    super(message ?? DEFAULT_MESSAGES[code] ?? 'error');
    this.name = 'RcpError';
    this.code = code;
    this.data = data;
  }

  static invalidParams(field: string, detail: string): RcpError {
    return new RcpError(ErrorCode.InvalidParams, `invalid params: ${field}: ${detail}`, { field, detail });
  }

  static optionUnsupported(option: string, detail?: string): RcpError {
    return new RcpError(ErrorCode.OptionUnsupported, `option unsupported: ${option}`, {
      option,
      ...(detail ? { detail } : {}),
    });
  }

  toWire(): WireError {
    const data = this.data ? sanitizeErrorData(this.data) : undefined;
    return data ? { code: this.code, message: this.message, data } : { code: this.code, message: this.message };
  }
}

/** Any thrown value → a wire error object. Unknown throwables become -32603 without leaking internals. */
export function toWireError(err: unknown): WireError {
  if (err instanceof RcpError) return err.toWire();
  return { code: ErrorCode.InternalError, message: 'internal error' };
}

/** §4.6: integers must be integers; drop non-finite numbers rather than emit them. */
function sanitizeErrorData(data: ErrorData): ErrorData | undefined {
  const out: ErrorData = {};
  let any = false;
  for (const [key, value] of Object.entries(data)) {
    if (value === undefined) continue;
    if (typeof value === 'number' && !Number.isFinite(value)) continue;
    if (key === 'retryAfterMs') {
      if (typeof value !== 'number') continue;
      out.retryAfterMs = Math.max(0, Math.round(value));
    } else {
      out[key] = value;
    }
    any = true;
  }
  return any ? out : undefined;
}
