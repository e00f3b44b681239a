/**
 * zod schemas for the params the gateway itself interprets. Lenient by design (§4.6):
 * unknown fields pass through, `null` is treated as absent, integers are checked as integers.
 */
import { z } from 'zod';
import { RcpError } from './errors.js';
import { isJsonObject, type JsonObject } from './jsonrpc.js';

/** `null` ⇒ absent (§4.6), then optional. */
function opt<T extends z.ZodType>(schema: T) {
  return z.preprocess((v) => (v === null ? undefined : v), schema.optional());
}

const safeInt = z.int(); // zod's int() is bounded to the safe-integer range (§4.6: 53-bit)
const positive = safeInt.min(1, 'must be a positive integer');

/**
 * A client's trace id is echoed, logged and forwarded to every engine, so only a short run of
 * visible ASCII is taken (no CR/LF, no 100 KB ids); anything else is treated as absent and the
 * gateway generates one (§4.6 leniency: a bad trace id never fails the request).
 */
const TRACE_ID = /^[\x21-\x7e]{1,128}$/;
const LOG_LEVELS = ['debug', 'info', 'notice', 'warning', 'error'] as const;
const traceIdOrAbsent = (v: unknown): unknown => (typeof v === 'string' && TRACE_ID.test(v) ? v : undefined);

export const MetaSchema = z.looseObject({
  progressToken: opt(z.union([z.string(), safeInt], 'must be a string or integer')),
  deadlineMs: opt(z.number().finite().min(0, 'must be ≥ 0')),
  traceId: z.preprocess(traceIdOrAbsent, z.string().optional()),
  logLevel: opt(z.enum(LOG_LEVELS)),
  federation: opt(
    z.looseObject({
      depth: opt(safeInt.min(0)),
      path: opt(z.array(z.string())),
    }),
  ),
});
export type RequestMeta = z.infer<typeof MetaSchema>;

export const InitializeParamsSchema = z.looseObject({
  protocolVersion: safeInt,
  client: opt(z.looseObject({ name: opt(z.string()), version: opt(z.string()) })),
  capabilities: opt(z.record(z.string(), z.unknown())),
  _meta: opt(MetaSchema),
});

export const PingParamsSchema = z.looseObject({
  nonce: opt(z.union([z.string(), z.number().finite()])),
});

export const CancelParamsSchema = z.looseObject({
  id: z.union([z.string(), z.number().finite()]),
  reason: opt(z.string()),
});

export const RetrieveParamsSchema = z.looseObject({
  query: z.union([z.string(), z.looseObject({ type: z.string() }), z.array(z.unknown()).min(1)]),
  k: opt(positive),
  mode: opt(z.enum(['dense', 'sparse', 'hybrid'])),
  candidateK: opt(positive),
  rerank: opt(z.union([z.literal(false), z.looseObject({ method: opt(z.string()), topN: opt(positive) })])),
  strict: opt(z.boolean()),
  cursor: opt(z.string()),
  fusion: opt(z.looseObject({ method: opt(z.enum(['rrf', 'weighted', 'convex'])), rrfK: opt(z.number().finite().min(0)) })),
  _meta: opt(MetaSchema),
});
export type RetrieveParams = z.infer<typeof RetrieveParamsSchema>;

export const GraphParamsSchema = z.looseObject({
  op: z.enum(['local', 'global', 'drift', 'communities', 'neighbors']),
  query: opt(z.string()),
  k: opt(positive),
  seedIds: opt(z.array(z.string())),
  hops: opt(safeInt.min(0)),
  cursor: opt(z.string()),
  _meta: opt(MetaSchema),
});

function pathOf(issue: z.core.$ZodIssue): string {
  return issue.path.map((p) => String(p)).join('.') || '(params)';
}

function valueAt(root: unknown, path: readonly PropertyKey[]): unknown {
  let cur: unknown = root;
  for (const key of path) {
    if (typeof cur !== 'object' || cur === null) return undefined;
    cur = (cur as Record<PropertyKey, unknown>)[key];
  }
  return cur;
}

/** Parse params or throw -32602 naming the offending field (§12.1 `error.data.field`). */
export function parseParams<T extends z.ZodType>(schema: T, params: JsonObject): z.infer<T> {
  const parsed = schema.safeParse(params);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  if (!issue) throw RcpError.invalidParams('(params)', 'invalid');
  const field = pathOf(issue);
  const detail = valueAt(params, issue.path) === undefined ? 'required' : issue.message;
  throw RcpError.invalidParams(field, detail);
}

/** A request's `_meta` (§4.4): absent is empty; a field error names `_meta.<field>`. */
export function parseRequestMeta(raw: unknown): RequestMeta {
  if (raw === undefined || raw === null) return {};
  if (typeof raw !== 'object' || Array.isArray(raw)) throw RcpError.invalidParams('_meta', 'must be an object');
  const plain = plainMeta(raw as JsonObject);
  if (plain !== undefined) return plain;
  try {
    return parseParams(MetaSchema, raw as JsonObject);
  } catch (err) {
    if (err instanceof RcpError && err.data?.field) {
      throw RcpError.invalidParams(`_meta.${err.data.field}`, String(err.data.detail ?? 'invalid'));
    }
    throw err;
  }
}

/**
 * The usual `_meta` (each field the gateway reads absent or already valid) read without zod,
 * to exactly what MetaSchema makes of it: its known keys first in its order, then the others,
 * `federation` and its `path` copied. Many clients send a `_meta` (a progress token, a trace
 * id) with every request, and the schema cost it 0.5–1.5 µs. Anything else (a `null`, a wrong
 * type, a trace id to drop) is undefined here and goes through the schema, which gives the
 * exact error or normalisation. test/unit/request-meta.test.ts holds the two to the same output.
 */
function plainMeta(raw: JsonObject): RequestMeta | undefined {
  const { progressToken, deadlineMs, traceId, logLevel, federation } = raw;
  if (progressToken !== undefined && typeof progressToken !== 'string' && !Number.isSafeInteger(progressToken)) return undefined;
  if (deadlineMs !== undefined && !(typeof deadlineMs === 'number' && Number.isFinite(deadlineMs) && deadlineMs >= 0)) return undefined;
  if (traceId !== undefined && !(typeof traceId === 'string' && TRACE_ID.test(traceId))) return undefined;
  if (logLevel !== undefined && !(LOG_LEVELS as readonly unknown[]).includes(logLevel)) return undefined;
  let path: string[] | undefined;
  if (federation !== undefined) {
    if (!isJsonObject(federation)) return undefined;
    const { depth } = federation;
    if (depth !== undefined && !(Number.isSafeInteger(depth) && (depth as number) >= 0)) return undefined;
    if (federation.path !== undefined) {
      if (!Array.isArray(federation.path) || !federation.path.every((hop) => typeof hop === 'string')) return undefined;
      path = federation.path.slice() as string[];
    }
  }
  const out: Record<string, unknown> = {};
  if (progressToken !== undefined) out.progressToken = progressToken;
  if (deadlineMs !== undefined) out.deadlineMs = deadlineMs;
  if (traceId !== undefined) out.traceId = traceId;
  if (logLevel !== undefined) out.logLevel = logLevel;
  if (federation !== undefined) out.federation = plainFederation(federation as JsonObject, path);
  copyOtherKeys(raw, META_KEYS, out);
  return out as RequestMeta;
}

const META_KEYS: ReadonlySet<string> = new Set(['progressToken', 'deadlineMs', 'traceId', 'logLevel', 'federation']);
const FEDERATION_KEYS: ReadonlySet<string> = new Set(['depth', 'path']);

function plainFederation(federation: JsonObject, path: string[] | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (federation.depth !== undefined) out.depth = federation.depth;
  if (path !== undefined) out.path = path;
  copyOtherKeys(federation, FEDERATION_KEYS, out);
  return out;
}

/**
 * The keys a loose schema passes through after its own (`known`), in order: own keys only, and
 * not `__proto__`, which the schema drops (JSON.parse makes it an own key), so this does too.
 */
function copyOtherKeys(from: JsonObject, known: ReadonlySet<string>, to: Record<string, unknown>): void {
  for (const key in from) {
    if (!known.has(key) && key !== '__proto__' && Object.prototype.hasOwnProperty.call(from, key)) to[key] = from[key];
  }
}
