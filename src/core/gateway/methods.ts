/**
 * What the gateway does per method (§7.13 aggregator): the methods it answers itself, by
 * federation or from its own state, keyed by the RCP method roster (core/protocol/methods.ts) so
 * only a defined core method can have an entry. Every other method — core methods without an
 * entry, vendor extensions, anything called directly past the session's gate — is routed to
 * one engine.
 */
import type { JsonObject } from '../protocol/jsonrpc.js';
import { isCoreMethod, type CoreMethod } from '../protocol/methods.js';
import type { CallContext } from '../service/contract.js';
import { catalogList } from '../federation/catalog.js';
import type { FederationContext } from '../federation/context.js';
import { federatedGraph } from '../federation/graph.js';
import { experimentRetrieve } from '../federation/experiment-retrieve.js';
import { experimentFeedback } from '../federation/experiment-feedback.js';
import { EXPERIMENTS_METHOD, experimentsReport } from '../federation/experiment-report.js';
import { routeToOne } from '../federation/routing.js';
import { federatedWrite } from '../federation/writes.js';

export type MethodHandler = (method: string, params: JsonObject, ctx: CallContext, fed: FederationContext) => Promise<JsonObject>;

const catalog: MethodHandler = (_method, _params, _ctx, fed) => Promise.resolve(catalogList(fed.engines, fed.settings.exposeEndpoints));

const GATEWAY_METHODS: Readonly<Partial<Record<CoreMethod, MethodHandler>>> = {
  // Live experiments hook in here (experiment-retrieve.ts); without any, one check and the plain fused retrieve.
  retrieve: (_method, params, ctx, fed) => experimentRetrieve(params, ctx, fed),
  graph: (_method, params, ctx, fed) => federatedGraph(params, ctx, fed),
  'catalog/list': catalog,
  'index/add': federatedWrite,
  'index/delete': federatedWrite,
  // Feedback carrying an interleaving token credits an arm, then is forwarded; otherwise routed.
  feedback: experimentFeedback,
};

/** The handler for a method: the gateway's own, else routing to one engine. */
export function methodHandler(method: string): MethodHandler {
  if (method === EXPERIMENTS_METHOD) return experimentsReport;
  return (isCoreMethod(method) ? GATEWAY_METHODS[method] : undefined) ?? routeToOne;
}
