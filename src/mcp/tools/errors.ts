/**
 * RCP errors (§12) as MCP tool errors: a `tools/call` result with `isError: true`, because the
 * model is the audience — it reads the text and can fix its arguments or retry. The text names
 * the RCP code and symbol, the offending field or option, and the §12.2 retry advice; the same
 * facts are in `structuredContent.error` for programs.
 */
import type { CallToolResult } from '@modelcontextprotocol/server';
import { ErrorCode, isRetryableCode, toWireError, type WireError } from '../../core/protocol/errors.js';

const SYMBOLS: ReadonlyMap<number, string> = new Map(Object.entries(ErrorCode).map(([name, code]) => [code, name]));

/** §12.2 client actions, phrased for a model. */
const ADVICE: Readonly<Record<number, string>> = {
  [ErrorCode.InvalidParams]: 'Fix the arguments; do not retry them unchanged.',
  [ErrorCode.OptionUnsupported]: 'That option is not offered; call again without it.',
  [ErrorCode.CapabilityMissing]: 'No engine behind the gateway offers this; do not retry.',
  [ErrorCode.BackendUnavailable]: 'The engines are unavailable right now; retry later.',
  [ErrorCode.RateLimited]: 'The gateway is at capacity; wait and retry.',
  [ErrorCode.Timeout]: 'The deadline passed; retry, perhaps with a smaller k.',
  [ErrorCode.Cancelled]: 'The call was cancelled.',
  [ErrorCode.NotFound]: 'The cursor or entity is gone; start the search again without a cursor.',
};

export interface ToolErrorDetail {
  code: number;
  symbol: string;
  message: string;
  retryable: boolean;
  data?: Record<string, unknown>;
}

export function toolErrorDetail(error: WireError): ToolErrorDetail {
  return {
    code: error.code,
    symbol: SYMBOLS.get(error.code) ?? (error.code < 0 ? 'Error' : 'Unknown'),
    message: error.message,
    retryable: error.data?.retryable ?? isRetryableCode(error.code),
    ...(error.data ? { data: { ...error.data } } : {}),
  };
}

export function toolError(tool: string, error: WireError): CallToolResult {
  const detail = toolErrorDetail(error);
  const where = error.data?.field
    ? ` (argument "${String(error.data.field)}")`
    : error.data?.option
      ? ` (option "${String(error.data.option)}")`
      : '';
  const wait = typeof error.data?.retryAfterMs === 'number' ? ` Retry after ${error.data.retryAfterMs} ms.` : '';
  const advice = ADVICE[error.code] ?? (detail.retryable ? 'An identical retry might succeed.' : 'Do not retry unchanged.');
  const text = `${tool} failed: RCP error ${detail.code} ${detail.symbol}: ${detail.message}${where}. ${advice}${wait}`;
  return { isError: true, content: [{ type: 'text', text }], structuredContent: { error: { ...detail } } };
}

/** Anything a tool handler throws (RcpError from argument parsing, or a bug) as a tool error. */
export function thrownToolError(tool: string, err: unknown): CallToolResult {
  return toolError(tool, toWireError(err));
}
