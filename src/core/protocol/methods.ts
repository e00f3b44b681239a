/**
 * The RCP/1 method roster (§7) and the capability key that gates each method.
 */
import { ErrorCode, RcpError } from './errors.js';

/** Methods callable at any time, before or after initialize (§13, §14.1). */
export const UNGATED_ANYTIME = new Set(['info', 'ping', 'shutdown']);

/** Core method → gating capability key (§7 table). `null` = no capability needed. */
const METHOD_CAPABILITY = {
  initialize: null,
  info: null,
  ping: null,
  shutdown: null,
  embed: 'embed',
  'embed/sparse': 'sparseEmbed',
  'embed/multi': 'multiVector',
  rerank: 'rerank',
  retrieve: 'retrieve',
  'query/transform': 'transform',
  graph: 'graph',
  'index/add': 'index',
  'index/delete': 'index',
  'catalog/list': 'catalog',
  feedback: 'feedback',
  'memory/build': 'memory',
  'memory/recall': 'memory',
} as const satisfies Readonly<Record<string, string | null>>;

/** A method RCP/1 defines (§7), as opposed to a vendor extension or an undefined name. */
export type CoreMethod = keyof typeof METHOD_CAPABILITY;

export function isCoreMethod(method: string): method is CoreMethod {
  return Object.prototype.hasOwnProperty.call(METHOD_CAPABILITY, method);
}

/**
 * The method-name grammar (§4.1, §4.5, §6.2): `<verb>` or `<verb>/<sub>`, vendor methods
 * `x-<vendor>/<name>`, notifications `notifications/<name>`; segments of `[a-z0-9-]`. A name
 * outside it names no method, and is never let near an engine's URL path.
 */
const METHOD_NAME = /^[a-z0-9][a-z0-9-]*(?:\/[a-z0-9][a-z0-9-]*)*$/;
const MAX_METHOD_NAME = 128;

export function isWellFormedMethodName(method: string): boolean {
  return method.length <= MAX_METHOD_NAME && METHOD_NAME.test(method);
}

/**
 * The URL path of a method under an engine's base path (§5.2: `<base>/<method>`). Only a name
 * inside the grammar becomes a path, and such a name needs no encoding (segments of `[a-z0-9-]`).
 * Encoding a name outside it is not enough: a WHATWG URL parser (every `fetch`) reads `%2E%2E` as
 * `..` and would climb out of the base path. Requests with such names are refused before they
 * reach an engine (jsonrpc.ts `classify`); this holds the line for every other caller too.
 */
export function methodUrlPath(method: string): string {
  if (!isWellFormedMethodName(method)) {
    throw new RcpError(ErrorCode.InvalidRequest, 'method name is not well formed (segments of [a-z0-9-], §4.1)');
  }
  return method;
}

const VENDOR_METHOD = /^x-([a-z0-9][a-z0-9-]*)\/.+/;

/** `x-acme/foo` → capability key `x-acme` (§6.2: extension methods are gated by a matching key). */
export function vendorCapabilityOf(method: string): string | undefined {
  const match = VENDOR_METHOD.exec(method);
  return match ? `x-${match[1]}` : undefined;
}

/**
 * What a method name is: a core method (with its gate), a vendor extension, or undefined by RCP.
 * Undefined methods get -32004, which MUST be preferred over -32003 (§12).
 */
export function methodGate(method: string): { defined: true; capability: string | null } | { defined: false } {
  if (isCoreMethod(method)) return { defined: true, capability: METHOD_CAPABILITY[method] };
  const vendor = vendorCapabilityOf(method);
  if (vendor) return { defined: true, capability: vendor };
  return { defined: false };
}

/** Read-only methods: safe to retry and to fail over (§12.2, §13.1). */
export const READ_METHODS = new Set([
  'retrieve',
  'embed',
  'embed/sparse',
  'embed/multi',
  'rerank',
  'query/transform',
  'graph',
  'catalog/list',
  'memory/recall',
  'info',
  'ping',
]);
