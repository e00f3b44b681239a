/**
 * A database adapter as an RCP service (§7.7 retrieve, §8 filter, §10 pagination): one
 * implementation, served in-process by the gateway or standalone over stdio/HTTP. It advertises
 * exactly what it does: sparse (full-text) retrieval with the backend's ranking, citations,
 * pagination, and `filter` with the declared fields, their types and the operators they allow.
 */
import { z } from 'zod';
import { PROTOCOL_VERSION, type InitializeResult } from '../core/protocol/capabilities.js';
import { ErrorCode, RcpError } from '../core/protocol/errors.js';
import type { JsonObject } from '../core/protocol/jsonrpc.js';
import { parseParams } from '../core/protocol/params.js';
import type { CallContext, RcpService } from '../core/service/contract.js';
import type { AdapterBackend, InspectionNote } from './backend.js';
import { adapterName, declaredFields, type AdapterConfig } from './config.js';
import { decodeCursor, encodeCursor, requestFingerprint } from './cursor.js';
import { validateFilter } from './filter/validate.js';
import { advertisedOperators, type FilterOperator } from './filter/types.js';
import { rowToHit } from './hits.js';
import { queryText, queryWords } from './query-text.js';

/** `null` is absent (§4.6). */
function opt<T extends z.ZodType>(schema: T) {
  return z.preprocess((v) => (v === null ? undefined : v), schema.optional());
}

const RetrieveParams = z.looseObject({
  query: z.unknown().refine((v) => v !== undefined, 'required'),
  k: opt(z.int().min(1)),
  mode: opt(z.enum(['dense', 'sparse', 'hybrid'])),
  strict: opt(z.boolean()),
  cursor: opt(z.string()),
  filter: opt(z.unknown()),
  minScore: opt(z.number().finite()),
  includeText: opt(z.boolean()),
  rerank: opt(z.unknown()),
});

export interface AdapterServiceOptions {
  /** Facts found when the backend was opened (shown in `_meta.notes` and by check-config). */
  notes?: readonly InspectionNote[];
  version?: string;
}

export function createAdapterService(config: AdapterConfig, backend: AdapterBackend, options: AdapterServiceOptions = {}): RcpService {
  const fields = declaredFields(config);
  const operators = advertisedOperators(fields);
  const name = adapterName(config);
  const source = config.source ?? name;
  const described = describe(config, backend, fields, operators, options);
  return {
    defaultDeadlineMs: 30_000,
    describe: () => described,
    async call(method: string, params: JsonObject, ctx: CallContext): Promise<JsonObject> {
      if (method !== 'retrieve') throw new RcpError(ErrorCode.CapabilityMissing, `capability not advertised for ${method}`);
      return retrieve(params, ctx);
    },
  };

  async function retrieve(params: JsonObject, ctx: CallContext): Promise<JsonObject> {
    const started = performance.now();
    const parsed = parseParams(RetrieveParams, params);
    const notes: string[] = [];
    const strict = parsed.strict !== false;
    // §7.7: an unsupported mode or reranker is -32005 unless strict:false, then noted.
    if (parsed.mode !== undefined && parsed.mode !== 'sparse') {
      if (strict) throw RcpError.optionUnsupported('mode', 'this engine only supports "sparse"');
      notes.push(`mode "${parsed.mode}" unsupported: served sparse`);
    }
    if (parsed.rerank !== undefined && parsed.rerank !== false) {
      if (strict) throw RcpError.optionUnsupported('rerank', 'this engine has no reranker');
      notes.push('rerank unsupported: ignored');
    }
    const raw = queryText(parsed.query);
    const filter = parsed.filter === undefined ? undefined : validateFilter(parsed.filter, fields, operators);
    const fingerprint = requestFingerprint([raw, parsed.filter ?? null, parsed.minScore ?? null]);
    const offset = parsed.cursor === undefined ? 0 : decodeCursor(parsed.cursor, fingerprint);
    const k = Math.min(parsed.k ?? 10, config.maxK, Math.max(0, config.maxDepth - offset));
    const { words, truncated } = queryWords(raw);
    if (truncated) notes.push(`query cut to its first ${words.length} distinct words`);
    const includeText = parsed.includeText !== false;
    ctx.signal.throwIfAborted();
    // One row beyond the page says whether a next page exists without counting every match.
    const rows =
      k === 0 || (words.length === 0 && raw.trim() === '')
        ? []
        : await backend.search({ words, raw, limit: k + 1, offset, filter, minScore: parsed.minScore, includeText });
    const page = rows.slice(0, k);
    const result: JsonObject = {
      hits: page.map((row) => rowToHit(row, source, includeText)),
      usage: { latencyMs: Math.round(performance.now() - started), ...(notes.length > 0 ? { notes } : {}) },
    };
    if (rows.length > k && offset + k < config.maxDepth) result.nextCursor = encodeCursor(offset + k, fingerprint);
    return result;
  }
}

function describe(
  config: AdapterConfig,
  backend: AdapterBackend,
  fields: ReturnType<typeof declaredFields>,
  operators: readonly FilterOperator[],
  options: AdapterServiceOptions,
): InitializeResult {
  const capabilities: Record<string, JsonObject> = {
    // Both rankings (ts_rank_cd/ts_rank, FTS5 bm25 negated) are ≥ 0 for every query and corpus.
    retrieve: { maxK: config.maxK, modes: ['sparse'], defaultMode: 'sparse', scoreScale: backend.scoreScale, scoreFloor: 0 },
    citations: {},
    pagination: {},
  };
  if (Object.keys(fields).length > 0) {
    capabilities.filter = {
      fields: Object.fromEntries(Object.entries(fields).map(([field, spec]) => [field, spec.type])),
      operators: [...operators],
    };
  }
  const meta: JsonObject = { conformance: 'L0', adapter: backend.kind };
  if (options.notes && options.notes.length > 0) meta.notes = options.notes.map((note) => `${note.level}: ${note.message}`);
  return {
    protocolVersion: PROTOCOL_VERSION,
    server: { name: adapterName(config), version: options.version ?? '0.1.0' },
    capabilities,
    _meta: meta,
  };
}
