/**
 * What the gateway advertises (§6, §16.4): derived from its engines, true for what it will do.
 *  - `retrieve` with the gateway's maxK and the union of engine modes (fused, §16.3);
 *  - `catalog {engines}`, `streaming`, and `pagination` (federated cursors, §10);
 *  - every routable capability (the union over the engines routing may pick for its methods),
 *    with metadata only where it holds whichever of them serves a call: option lists are unions
 *    (routing only picks an engine that lists the requested option, options.ts), limits are
 *    minima, and a model's `identity`/`dimension` only when every candidate embeds with the same
 *    model (otherwise clients learn per-engine details from `catalog/list`, §7.13);
 *  - `graph` with the union of ops; `log`, `citations` and `x-<vendor>` keys when any engine has them.
 * The gateway computes this once its engines are known; a session keeps the set it initialized
 * with (§13.2): an engine that goes down later makes calls fail with -32010, it never shrinks it.
 */
import { routeEngineIds } from '../config/schema.js';
import type { Capabilities } from '../protocol/capabilities.js';
import { positiveInt, stringArray } from '../protocol/capabilities.js';
import type { JsonObject } from '../protocol/jsonrpc.js';
import type { Engine } from '../upstream/engine.js';
import { optionSupport } from './retrieve-options.js';
import type { GatewaySettings } from '../config/schema.js';
import { reportCapability } from './experiment-report.js';

/** Capabilities routed to a single engine (not fused), with the methods they gate (§7). */
export const ROUTED_CAPABILITIES: Readonly<Record<string, readonly string[]>> = {
  embed: ['embed'],
  sparseEmbed: ['embed/sparse'],
  multiVector: ['embed/multi'],
  rerank: ['rerank'],
  transform: ['query/transform'],
  index: ['index/add', 'index/delete'],
  feedback: ['feedback'],
  memory: ['memory/build', 'memory/recall'],
};

export function deriveCapabilities(engines: readonly Engine[], settings: GatewaySettings): Capabilities {
  const known = engines.filter((engine) => engine.capabilities !== undefined);
  const caps: Capabilities = {};

  const retrievers = known.filter((engine) => engine.has('retrieve'));
  if (retrievers.length > 0 || engines.length > known.length) {
    const fanout = retrieveFanout(retrievers, settings);
    caps.retrieve = advertisedRetrieve(fanout, settings);
    const filter = optionSupport(fanout.map((engine) => engine.capabilities!)).filter;
    if (filter) caps.filter = { ...filter };
  }
  // Fused retrieve/graph pages and routed engines' wrapped cursors all carry a nextCursor (§10).
  if (settings.pagination) caps.pagination = {};
  caps.catalog = { engines: engines.length };
  caps.streaming = {};

  for (const [key, methods] of Object.entries(ROUTED_CAPABILITIES)) {
    const providers = routable(known, key, methods, settings);
    if (providers.length === 0) continue;
    caps[key] = mergedMetadata(
      key,
      providers.map((engine) => engine.capabilities![key]!),
    );
  }

  const graphEngines = known.filter((engine) => engine.has('graph'));
  if (graphEngines.length > 0)
    caps.graph = {
      ops: union(
        graphEngines.map((engine) => engine.capabilities!.graph!),
        'ops',
      ),
    };
  if (known.some((engine) => engine.has('log'))) caps.log = {};
  if (retrievers.some((engine) => engine.has('citations'))) caps.citations = {};
  const vendorKeys = new Set<string>();
  for (const engine of known) for (const key of Object.keys(engine.capabilities!)) if (key.startsWith('x-')) vendorKeys.add(key);
  for (const key of [...vendorKeys].sort()) {
    const providers = known.filter((engine) => engine.has(key));
    caps[key] = providers.length === 1 ? { ...providers[0]!.capabilities![key]! } : {};
  }
  advertiseExperiments(caps, settings);
  return caps;
}

/** The engines a plain `retrieve` fans out to: its configured route's, else every retriever. */
function retrieveFanout(retrievers: readonly Engine[], settings: GatewaySettings): Engine[] {
  const routed = routeEngineIds(settings.routes.retrieve);
  return routed === undefined ? [...retrievers] : retrievers.filter((engine) => routed.includes(engine.id));
}

/**
 * `retrieve` as the gateway serves it (§6.1): its own maxK; selectors (`modes`, `modalities`) as
 * the union (engines without one are skipped); pipeline options only when every engine of the
 * fan-out honours them (retrieve-options.ts), so nothing advertised is ever refused.
 */
function advertisedRetrieve(fanout: readonly Engine[], settings: GatewaySettings): JsonObject {
  const retrieve: JsonObject = { maxK: settings.maxK };
  const caps = fanout.map((engine) => engine.capabilities!.retrieve!);
  const modes = union(caps, 'modes');
  if (modes.length > 0) retrieve.modes = modes;
  if (caps.some((cap) => Array.isArray(cap.modalities))) {
    const modalities = new Set<string>();
    for (const cap of caps) for (const m of Array.isArray(cap.modalities) ? stringArray(cap.modalities) : ['text']) modalities.add(m);
    retrieve.modalities = [...modalities].sort();
  }
  const support = optionSupport(fanout.map((engine) => engine.capabilities!));
  if (support.fusion.length > 0) retrieve.fusion = support.fusion;
  if (support.mmr) retrieve.mmr = true;
  if (support.rerankBuiltin) retrieve.rerankBuiltin = true;
  if (caps.some((cap) => Array.isArray(cap.units)) && support.units.length > 0) retrieve.units = support.units;
  if (support.levels > 1) retrieve.levels = support.levels;
  return retrieve;
}

/**
 * What `_meta.x-rcpgw.options` says the gateway does with each `retrieve` option (docs/federation.md
 * "Retrieve options"): `honoured` ones are carried out for the fused answer; `refused` ones are
 * answered -32005 (or dropped with a note under `strict: false`); `forwarded` ones are hints.
 */
export function retrieveOptionPolicy(engines: readonly Engine[], settings: GatewaySettings): JsonObject {
  const fanout = retrieveFanout(
    engines.filter((engine) => engine.has('retrieve')),
    settings,
  );
  const support = optionSupport(fanout.map((engine) => engine.capabilities!));
  const honoured = ['candidateK', 'mode', 'modality'];
  const refused = ['tokenBudget'];
  const sort = (flag: boolean, option: string): number => (flag ? honoured : refused).push(option);
  sort(support.filter !== undefined, 'filter');
  sort(support.rerankBuiltin, 'rerank');
  sort(support.mmr, 'mmr');
  sort(support.fusion.length > 0, 'fusion');
  sort(support.units.length > 0, 'unit');
  sort(support.levels > 1, 'level');
  return { honoured: honoured.sort(), refused: refused.sort(), forwarded: ['sessionId'], strictByDefault: true };
}

/**
 * Live experiments (experiment-*.ts): an interleave experiment takes §7.16 `feedback` (the gateway
 * credits it even when no engine does), and the report is the vendor method `x-rcpgw/experiments`.
 */
function advertiseExperiments(caps: Capabilities, settings: GatewaySettings): void {
  if (settings.experiments?.list.some((experiment) => experiment.kind === 'interleave')) caps.feedback ??= {};
  const report = reportCapability(settings);
  if (report !== undefined) caps['x-rcpgw'] = report;
}

/**
 * The engines routing may pick for a capability's methods: a configured route's engines when
 * every method of the capability has one, else every engine advertising the capability.
 */
function routable(known: readonly Engine[], key: string, methods: readonly string[], settings: GatewaySettings): Engine[] {
  const capable = known.filter((engine) => engine.has(key));
  const routed = methods.map((method) => routeEngineIds(settings.routes[method]));
  if (routed.some((ids) => ids === undefined)) return capable;
  const ids = new Set(routed.flatMap((list) => list ?? []));
  return capable.filter((engine) => ids.has(engine.id));
}

function union(values: readonly JsonObject[], listKey: string): string[] {
  const out = new Set<string>();
  for (const value of values) for (const item of stringArray(value[listKey])) out.add(item);
  return [...out].sort();
}

function intersection(values: readonly JsonObject[], listKey: string): string[] | undefined {
  if (values.some((value) => !Array.isArray(value[listKey]))) return undefined;
  const [first, ...rest] = values.map((value) => stringArray(value[listKey]));
  return first!.filter((item) => rest.every((list) => list.includes(item)));
}

/** The least of a positive limit every provider advertises (absent if any provider has none). */
function minimum(values: readonly JsonObject[], key: string): number | undefined {
  const limits = values.map((value) => positiveInt(value[key]));
  return limits.every((limit) => limit !== undefined) ? Math.min(...(limits as number[])) : undefined;
}

/** A flag that holds for every provider. */
function everyone(values: readonly JsonObject[], key: string): boolean {
  return values.every((value) => value[key] === true);
}

/** Only metadata that is true whichever provider routing picks. */
export function mergedMetadata(key: string, values: readonly JsonObject[]): JsonObject {
  if (values.length === 1) return { ...values[0]! };
  const out: JsonObject = {};
  const set = (name: string, value: unknown): void => {
    if (value !== undefined && value !== false) out[name] = value;
  };
  switch (key) {
    case 'rerank':
      out.methods = union(values, 'methods');
      set('maxCandidates', minimum(values, 'maxCandidates'));
      if (values.some((value) => Array.isArray(value.models))) out.models = union(values, 'models');
      return out;
    case 'transform':
      return { methods: union(values, 'methods') };
    case 'memory':
      out.scopes = union(values, 'scopes');
      set('clues', everyone(values, 'clues'));
      return out;
    case 'index': {
      const writers = values.filter((value) => value.writable === true);
      out.writable = writers.length > 0;
      // Chunking / contextual hold only if every engine a write may reach offers them.
      set('chunking', writers.length > 0 && everyone(writers, 'chunking'));
      set('contextual', writers.length > 0 && everyone(writers, 'contextual'));
      return out;
    }
    case 'embed':
    case 'sparseEmbed':
    case 'multiVector': {
      // §15.7: a model's identity/dimension only when every candidate uses the same model.
      const first = values[0]!;
      const sameModel =
        typeof first.identity === 'string' &&
        values.every((value) => value.identity === first.identity && value.dimension === first.dimension);
      if (!sameModel) return {};
      set('identity', first.identity);
      set('dimension', first.dimension);
      set('vocabulary', values.every((value) => value.vocabulary === first.vocabulary) ? first.vocabulary : undefined);
      set('similarity', values.every((value) => value.similarity === first.similarity) ? first.similarity : undefined);
      set('normalized', everyone(values, 'normalized'));
      set('batchLimit', minimum(values, 'batchLimit'));
      set('modalities', intersection(values, 'modalities'));
      set('encodings', intersection(values, 'encodings'));
      return out;
    }
    default:
      return {};
  }
}

/**
 * The `_meta` of `initialize`/`info`: §14 `conformance` (L0: the gateway keeps every L0 rule
 * itself and claims no L1 it cannot keep for arbitrary engines), and under the vendor key what it
 * does with each `retrieve` option (`retrieveOptionPolicy`).
 */
export function describeMeta(engines: readonly Engine[], settings: GatewaySettings): JsonObject {
  return { conformance: 'L0', aggregator: true, 'x-rcpgw': { retrieveOptions: retrieveOptionPolicy(engines, settings) } };
}
