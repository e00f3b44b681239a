/**
 * The audit log: one JSON line per request saying who (principal, tenant, how authenticated),
 * what (method), where (the engines that answered) and how it ended (code, outcome), plus one
 * per refused HTTP request (401/403/429). No query text unless `gateway.logQueries` (§15.6),
 * never credentials.
 */
import { isJsonObject, type JsonObject, type RequestId } from '../protocol/jsonrpc.js';
import type { Logger } from '../observability/logger.js';
import type { CallContext } from '../service/contract.js';
import type { FinishedInfo } from '../session/session.js';
import type { Principal } from './principal.js';

export interface AuditEntry {
  principal: string | null;
  tenant?: string;
  via?: string;
  method: string;
  id?: RequestId | null;
  transport?: string;
  engines: string[];
  code: number;
  outcome: 'ok' | 'error' | 'denied' | 'rate-limited';
  status?: number;
  reason?: string;
  address?: string;
  latencyMs?: number;
  query?: string;
}

const MAX_QUERY_CHARS = 1_000;

export class AuditLog {
  private readonly queries = new WeakMap<CallContext, string>();

  constructor(
    private readonly logger: Logger,
    private readonly logQueries: () => boolean,
  ) {}

  /** Keep the query text of a call for its audit line (only with `logQueries`). */
  noteCall(params: JsonObject, ctx: CallContext): void {
    if (!this.logQueries() || params.query === undefined) return;
    const text = typeof params.query === 'string' ? params.query : JSON.stringify(params.query);
    this.queries.set(ctx, text.length > MAX_QUERY_CHARS ? `${text.slice(0, MAX_QUERY_CHARS)}…` : text);
  }

  /** Session `onFinished`: the line for a request the session answered. */
  readonly finished = (info: FinishedInfo & { principal?: Principal }): void => {
    const principal = info.principal ?? info.ctx?.principal;
    const result = 'result' in info.response ? info.response.result : undefined;
    const query = info.ctx ? this.queries.get(info.ctx) : undefined;
    this.write({
      ...who(principal),
      method: info.method,
      id: info.response.id,
      ...(info.ctx ? { transport: info.ctx.transport } : {}),
      engines: enginesOf(result),
      code: info.code,
      outcome: info.code === 0 ? 'ok' : info.code === -32012 ? 'denied' : info.code === -32011 ? 'rate-limited' : 'error',
      latencyMs: Math.round(info.durationMs * 10) / 10,
      ...(query !== undefined ? { query } : {}),
    });
  };

  /** A request refused at the transport, before any JSON-RPC was read. */
  refused(entry: {
    principal?: Principal;
    principalId?: string;
    method: string;
    status: number;
    code: number;
    reason: string;
    address?: string;
  }): void {
    this.write({
      ...(entry.principal ? who(entry.principal) : { principal: entry.principalId ?? null }),
      method: entry.method,
      transport: 'http',
      engines: [],
      code: entry.code,
      outcome: entry.status === 429 ? 'rate-limited' : 'denied',
      status: entry.status,
      reason: entry.reason,
      ...(entry.address !== undefined ? { address: entry.address } : {}),
    });
  }

  private write(entry: AuditEntry): void {
    this.logger.info({ audit: entry }, 'audit');
  }
}

function who(principal: Principal | undefined): Pick<AuditEntry, 'principal' | 'tenant' | 'via'> {
  if (!principal) return { principal: null };
  return { principal: principal.id, ...(principal.tenant !== undefined ? { tenant: principal.tenant } : {}), via: principal.via };
}

/** Engines that answered: `_meta.engines` (federated) or `_meta.engine` (routed). */
function enginesOf(result: JsonObject | undefined): string[] {
  const meta = result && isJsonObject(result._meta) ? result._meta : undefined;
  if (!meta) return [];
  if (Array.isArray(meta.engines)) return meta.engines.filter((e): e is string => typeof e === 'string');
  return typeof meta.engine === 'string' ? [meta.engine] : [];
}
