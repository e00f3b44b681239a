/**
 * The bundled demo engine as an RCP service: a real BM25 engine (MiniSearch) over Cranfield,
 * one index view per process. It speaks RCP through the same session/transport code as the
 * gateway, so it is an honest L0 server with `retrieve`, `citations` and `pagination`.
 */
import { z } from 'zod';
import { RcpError } from '../../core/protocol/errors.js';
import type { InitializeResult } from '../../core/protocol/capabilities.js';
import { PROTOCOL_VERSION } from '../../core/protocol/capabilities.js';
import type { JsonObject } from '../../core/protocol/jsonrpc.js';
import { parseParams } from '../../core/protocol/params.js';
import type { CallContext, RcpService } from '../../core/service/contract.js';
import { createBm25Engine, type Bm25View } from './index.js';

const MAX_K = 100;

const SearchParams = z.looseObject({
  query: z.union([z.string(), z.looseObject({ type: z.literal('text'), text: z.string() })]),
  k: z.preprocess((v) => (v === null ? undefined : v), z.int().min(1).optional()),
  mode: z.preprocess((v) => (v === null ? undefined : v), z.enum(['dense', 'sparse', 'hybrid']).optional()),
  strict: z.preprocess((v) => (v === null ? undefined : v), z.boolean().optional()),
  cursor: z.preprocess((v) => (v === null ? undefined : v), z.string().optional()),
});

export function createDemoEngineService(view: Bm25View, name: string): RcpService {
  const engine = createBm25Engine(view);
  const described: InitializeResult = {
    protocolVersion: PROTOCOL_VERSION,
    server: { name, version: '0.1.0' },
    capabilities: {
      retrieve: { maxK: MAX_K, modes: ['sparse'], scoreScale: 'bm25', scoreFloor: 0, defaultMode: 'sparse' },
      citations: {},
      pagination: {},
      streaming: {},
    },
    _meta: { conformance: 'L0', corpus: 'cranfield', view },
  };
  return {
    defaultDeadlineMs: 30_000,
    describe: () => described,
    async call(method: string, params: JsonObject, ctx: CallContext): Promise<JsonObject> {
      if (method !== 'retrieve') throw new RcpError(-32003, `capability not advertised for ${method}`);
      const started = performance.now();
      const parsed = parseParams(SearchParams, params);
      // §7.7: an unsupported mode is -32005 unless strict:false.
      if (parsed.mode !== undefined && parsed.mode !== 'sparse' && parsed.strict !== false) {
        throw RcpError.optionUnsupported('mode', `this engine only supports "sparse"`);
      }
      const k = Math.min(parsed.k ?? 10, MAX_K);
      const offset = parsed.cursor !== undefined ? decodeCursor(parsed.cursor) : 0;
      const query = typeof parsed.query === 'string' ? parsed.query : parsed.query.text;
      ctx.progress?.({ progress: 0.5, stage: 'recall', message: `bm25 over ${view}` });
      const { hits, total } = engine.search(query, k, { offset });
      const result: JsonObject = {
        hits: hits.map((hit) => ({ ...hit })),
        usage: { candidates: total, latencyMs: Math.round(performance.now() - started) },
      };
      if (offset + hits.length < total) result.nextCursor = Buffer.from(String(offset + hits.length)).toString('base64url');
      return result;
    },
  };
}

function decodeCursor(cursor: string): number {
  const offset = Number(Buffer.from(cursor, 'base64url').toString('utf8'));
  if (!Number.isSafeInteger(offset) || offset < 0) throw RcpError.invalidParams('cursor', 'not a cursor this engine issued');
  return offset;
}
