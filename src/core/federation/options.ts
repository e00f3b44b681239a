/**
 * The options a routed call selects and the capability metadata each needs (§7, §12: -32005
 * `OptionUnsupported` with `error.data.option` when the method is advertised but the requested
 * option value is not). Used to pick only engines that can honour the call, and to reject the
 * call before any engine is asked when none can.
 */
import type { Capabilities } from '../protocol/capabilities.js';
import { stringArray } from '../protocol/capabilities.js';
import { RcpError } from '../protocol/errors.js';
import type { JsonObject } from '../protocol/jsonrpc.js';

export interface OptionRequirement {
  /** The params path of the option (`error.data.option`). */
  option: string;
  /** The requested value, for the message. */
  value: string;
  /** Whether an engine with these capabilities honours it. */
  supportedBy: (caps: Capabilities) => boolean;
}

function listed(capability: string, listKey: string, value: string): (caps: Capabilities) => boolean {
  return (caps) => stringArray(caps[capability]?.[listKey]).includes(value);
}

/** §7.3.1: `json` is always supported; any other encoding must be in `<capability>.encodings`. */
function encoding(capability: string, params: JsonObject): OptionRequirement | undefined {
  const value = params.encoding;
  if (typeof value !== 'string' || value === 'json') return undefined;
  return { option: 'encoding', value, supportedBy: listed(capability, 'encodings', value) };
}

function flag(capability: string, key: string, params: JsonObject, metaKey: string): OptionRequirement | undefined {
  if (params[key] !== true) return undefined;
  return { option: key, value: 'true', supportedBy: (caps) => caps[capability]?.[metaKey] === true };
}

/** Options whose value must be listed in capability metadata: method → [param, capability, list key]. */
const LISTED_OPTIONS: Readonly<Record<string, readonly [string, string, string]>> = {
  rerank: ['method', 'rerank', 'methods'], // §7.6: method MUST be in rerank.methods
  'query/transform': ['method', 'transform', 'methods'], // §7.8
  graph: ['op', 'graph', 'ops'], // §7.9: op MUST be in graph.ops
  'memory/build': ['scope', 'memory', 'scopes'], // §7.17
};

/** Every option `params` selects for `method`, with the capability metadata that must list it. */
export function optionRequirements(method: string, params: JsonObject): OptionRequirement[] {
  const out: Array<OptionRequirement | undefined> = [];
  const listedOption = LISTED_OPTIONS[method];
  if (listedOption) {
    const [option, capability, listKey] = listedOption;
    const value = params[option];
    if (typeof value === 'string') out.push({ option, value, supportedBy: listed(capability, listKey, value) });
  } else if (method === 'embed') {
    out.push(encoding('embed', params));
  } else if (method === 'embed/multi') {
    out.push(encoding('multiVector', params));
  } else if (method === 'index/add') {
    // §7.10: server-side chunking / contextual retrieval need index.chunking / index.contextual.
    out.push(flag('index', 'chunk', params, 'chunking'), flag('index', 'contextual', params, 'contextual'));
  }
  return out.filter((r): r is OptionRequirement => r !== undefined);
}

/** The first requirement `caps` fails, if any. */
export function unmetRequirement(caps: Capabilities, requirements: readonly OptionRequirement[]): OptionRequirement | undefined {
  return requirements.find((r) => !r.supportedBy(caps));
}

export function optionError(method: string, requirement: OptionRequirement, who: string): RcpError {
  return RcpError.optionUnsupported(
    requirement.option,
    `${method} ${requirement.option} "${requirement.value}" is not advertised by ${who}`,
  );
}
