/**
 * The `retrieve` options the gateway decides itself, before any engine is called (§7.7: options
 * are honoured "only per the advertised `retrieve` capability", strict by default; §8; §14.1 #4).
 * One rule per option, the same rule for what the gateway advertises (capabilities.ts, over the
 * engines a plain `retrieve` fans out to) and for what one request may use (retrieve.ts, over the
 * engines that request fans out to):
 *
 * - pipeline options — `filter`, `rerank`, `mmr`, `fusion`, `unit`, `level` — act inside each
 *   engine, so they hold for the fused answer only when **every** participating engine advertises
 *   them: `filter` with the fields (and operators) all of them list, `rerank` with
 *   `retrieve.rerankBuiltin` (and the method in `rerank.methods`), `mmr` with `retrieve.mmr`,
 *   `fusion.method` in `retrieve.fusion`, `unit` in `retrieve.units` (absent: chunk/passage),
 *   `level` below `retrieve.levels` (absent: flat, level 0 only). Otherwise: `-32005` naming
 *   `data.option` (strict), or dropped for every engine with a `usage.notes` line
 *   (`strict: false`). A filter on a field outside the advertised ones is `-32602` naming
 *   `data.field` whatever `strict` says (§8 MUST).
 * - `tokenBudget`: never honoured (each engine would pack its own list; the fused answer is `k`
 *   hits): `-32005` (strict) or dropped with a note.
 * - selector options — `mode`, `modality` — choose engines: an engine without it is skipped
 *   (noted); none left is `-32005` (retrieve.ts).
 * - `candidateK` and `rerank.topN` are forwarded and bound how deep each engine is read (§3.3);
 *   `sessionId` is forwarded as the hint it is (§7.7.3: an engine that ignores it still answers).
 */
import { positiveInt, stringArray, type Capabilities } from '../protocol/capabilities.js';
import { setOwn } from '../protocol/copy.js';
import { RcpError } from '../protocol/errors.js';
import { isJsonObject, type JsonObject } from '../protocol/jsonrpc.js';

/** §8 operators: what an engine that lists no `filter.operators` is taken to accept. */
const ALL_OPERATORS = ['eq', 'ne', 'gt', 'gte', 'lt', 'lte', 'in', 'nin', 'contains', 'exists'] as const;
/** §7.7.2: `retrieve.units` absent means chunk/passage only. */
const DEFAULT_UNITS = ['chunk', 'passage'];

/** The options the gateway can honour over a set of engines (their capabilities). */
export interface OptionSupport {
  /** `filter` fields every engine lists (object form when every engine types them, with agreeing types). */
  filter?: { fields: string[] | Record<string, string>; operators: string[] };
  rerankBuiltin: boolean;
  /** `rerank.method`s every engine can run inside `retrieve`. */
  rerankMethods: string[];
  mmr: boolean;
  fusion: string[];
  units: string[];
  /** Abstraction levels every engine has (1 = flat). */
  levels: number;
}

/** What every engine of `caps` honours. */
export function optionSupport(caps: readonly Capabilities[]): OptionSupport {
  const retrieve = caps.map((c) => c.retrieve ?? {});
  const every = (key: string): boolean => retrieve.length > 0 && retrieve.every((r) => r[key] === true);
  const rerankBuiltin = every('rerankBuiltin');
  const filter = caps.length > 0 && caps.every((c) => isJsonObject(c.filter)) ? commonFilter(caps.map((c) => c.filter!)) : undefined;
  // No field every engine filters on is no filter at all.
  const filterable = filter !== undefined && (Array.isArray(filter.fields) ? filter.fields : Object.keys(filter.fields)).length > 0;
  return {
    ...(filterable ? { filter } : {}),
    rerankBuiltin,
    rerankMethods: rerankBuiltin ? common(caps.map((c) => stringArray(c.rerank?.methods))) : [],
    mmr: every('mmr'),
    fusion: common(retrieve.map((r) => stringArray(r.fusion))),
    units: common(retrieve.map((r) => (Array.isArray(r.units) ? stringArray(r.units) : DEFAULT_UNITS))),
    levels: retrieve.length === 0 ? 1 : Math.min(...retrieve.map((r) => positiveInt(r.levels) ?? 1)),
  };
}

function common(lists: readonly string[][]): string[] {
  if (lists.length === 0) return [];
  const [first, ...rest] = lists;
  return [...new Set(first)].filter((item) => rest.every((list) => list.includes(item))).sort();
}

function commonFilter(filters: readonly JsonObject[]): NonNullable<OptionSupport['filter']> {
  const operators = common(filters.map((f) => (Array.isArray(f.operators) ? stringArray(f.operators) : [...ALL_OPERATORS])));
  const typed = filters.every((f) => isJsonObject(f.fields));
  const names = common(filters.map((f) => (isJsonObject(f.fields) ? Object.keys(f.fields) : stringArray(f.fields))));
  if (!typed) return { fields: names, operators };
  const fields: Record<string, string> = {};
  for (const name of names) {
    const types = new Set(filters.map((f) => (f.fields as JsonObject)[name]));
    const [type] = types;
    if (types.size === 1 && typeof type === 'string') setOwn(fields, name, type); // a field typed differently is not common; names come from engines
  }
  return { fields, operators };
}

/** What to do with one request's options: params to leave out for every engine, and why. */
export interface OptionDecision {
  omit: string[];
  notes: string[];
}

/**
 * Decide (or refuse) the request's options against what every participating engine honours.
 * `supportOf` is asked only when the request carries a pipeline option: most carry none, and the
 * support of the engine set is arrays, sets and sorts a plain request need not pay for.
 */
export function decideOptions(params: JsonObject, supportOf: () => OptionSupport): OptionDecision {
  let known: OptionSupport | undefined;
  const support = (): OptionSupport => (known ??= supportOf());
  const strict = params.strict !== false;
  const decision: OptionDecision = { omit: [], notes: [] };
  const refuse = (option: string, why: string, dropped = option): void => {
    if (strict) throw RcpError.optionUnsupported(option, why);
    decision.omit.push(dropped);
    decision.notes.push(`${dropped} dropped: ${why} (strict: false)`);
  };
  if (present(params.filter)) checkFilter(params.filter, support, refuse);
  if (isJsonObject(params.rerank)) {
    const method = params.rerank.method;
    if (!support().rerankBuiltin) refuse('rerank', 'not every engine reranks inside retrieve (retrieve.rerankBuiltin)');
    else if (typeof method === 'string' && !support().rerankMethods.includes(method)) {
      refuse('rerank.method', `rerank method "${method}" is not available on every engine`, 'rerank');
    }
  } else if (params.rerank === false && !support().rerankBuiltin) {
    decision.omit.push('rerank'); // "do not rerank" is what an engine without a built-in reranker does anyway
  }
  if (present(params.mmr) && !support().mmr) refuse('mmr', 'not every engine diversifies inside retrieve (retrieve.mmr)');
  if (isJsonObject(params.fusion)) {
    const method = typeof params.fusion.method === 'string' ? params.fusion.method : undefined;
    const ok = method === undefined ? support().fusion.length > 0 : support().fusion.includes(method);
    if (!ok)
      refuse('fusion', `${method ? `fusion method "${method}"` : 'hybrid fusion'} is not available on every engine (retrieve.fusion)`);
  }
  if (typeof params.unit === 'string' && !support().units.includes(params.unit)) {
    refuse('unit', `unit "${params.unit}" is not available on every engine (retrieve.units)`);
  }
  if (typeof params.level === 'number' && params.level >= support().levels) {
    refuse('level', `level ${params.level} is beyond what every engine has (retrieve.levels)`);
  }
  if (present(params.tokenBudget)) refuse('tokenBudget', 'the gateway returns k fused hits; it does not pack by tokens');
  return decision;
}

function present(value: unknown): boolean {
  return value !== undefined && value !== null;
}

/** §8: structure (-32602), fields (-32602 naming the field), operators (-32005 / dropped). */
function checkFilter(
  filter: unknown,
  supportOf: () => OptionSupport,
  refuse: (option: string, why: string, dropped?: string) => void,
): void {
  const leaves: Array<{ field: string; op: string }> = [];
  collectLeaves(filter, 'filter', leaves);
  const support = supportOf();
  if (!support.filter) return refuse('filter', 'not every engine filters (filter capability)');
  const fields = Array.isArray(support.filter.fields) ? support.filter.fields : Object.keys(support.filter.fields);
  for (const leaf of leaves) {
    if (!fields.includes(leaf.field)) {
      throw RcpError.invalidParams(`filter.${leaf.field}`, `field "${leaf.field}" is not advertised for filtering by every engine`);
    }
  }
  const op = leaves.find((leaf) => !support.filter!.operators.includes(leaf.op))?.op;
  if (op !== undefined) refuse('filter.op', `filter operator "${op}" is not available on every engine`, 'filter');
}

/** Walk a §8 filter tree; a malformed node is -32602 naming where it is. */
function collectLeaves(node: unknown, at: string, out: Array<{ field: string; op: string }>): void {
  if (!isJsonObject(node)) throw RcpError.invalidParams(at, 'expected a filter object');
  for (const combinator of ['and', 'or'] as const) {
    if (node[combinator] === undefined) continue;
    const children = node[combinator];
    if (!Array.isArray(children) || children.length === 0)
      throw RcpError.invalidParams(`${at}.${combinator}`, 'expected a non-empty array');
    children.forEach((child, i) => collectLeaves(child, `${at}.${combinator}[${i}]`, out));
    return;
  }
  if (node.not !== undefined) return collectLeaves(node.not, `${at}.not`, out);
  if (typeof node.field !== 'string' || typeof node.op !== 'string') {
    throw RcpError.invalidParams(at, 'expected {field, op, value} or and/or/not');
  }
  out.push({ field: node.field, op: node.op });
}

/** §4.8: the request's modality: `modality` when given, else what its query is made of. */
export function requestModality(params: JsonObject): string {
  if (typeof params.modality === 'string') return params.modality;
  const query = params.query;
  const blocks = Array.isArray(query) ? query : isJsonObject(query) ? [query] : [];
  const kinds = new Set(blocks.map(blockModality));
  if (kinds.size === 0) return 'text';
  return kinds.size === 1 ? [...kinds][0]! : 'multimodal';
}

function blockModality(block: unknown): string {
  if (!isJsonObject(block) || block.type === 'text') return 'text';
  if (block.type === 'image' || block.type === 'audio') return block.type;
  const mime = typeof block.mimeType === 'string' ? block.mimeType : '';
  return mime.startsWith('image/') ? 'image' : mime.startsWith('audio/') ? 'audio' : 'multimodal';
}

/** Whether an engine's `retrieve` takes queries of `modality` (§4.8: unadvertised means text only). */
export function acceptsModality(retrieve: JsonObject, modality: string): boolean {
  return (Array.isArray(retrieve.modalities) ? stringArray(retrieve.modalities) : ['text']).includes(modality);
}
