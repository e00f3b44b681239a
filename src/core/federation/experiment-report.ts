/**
 * The outcome report of live experiments as a vendor method (§6.2): `x-rcpgw/experiments`, gated
 * by the `x-rcpgw` capability, which the gateway advertises only when `gateway.experiments.report`
 * is on (off by default, like the other operator surfaces). The figures are this replica's since
 * it started (experiments/ledger.ts); Prometheus sums them across replicas.
 */
import { ErrorCode, RcpError } from '../protocol/errors.js';
import type { JsonObject } from '../protocol/jsonrpc.js';
import type { CallContext } from '../service/contract.js';
import type { FederationContext } from './context.js';

export const EXPERIMENTS_METHOD = 'x-rcpgw/experiments';

/** The capability that gates the report; advertised as `{ "x-rcpgw": { "experiments": true } }`. */
export function reportCapability(settings: FederationContext['settings']): JsonObject | undefined {
  return settings.experiments?.report === true ? { experiments: true } : undefined;
}

export function experimentsReport(_method: string, _params: JsonObject, _ctx: CallContext, fed: FederationContext): Promise<JsonObject> {
  if (reportCapability(fed.settings) === undefined || fed.experiments === undefined) {
    return Promise.reject(new RcpError(ErrorCode.CapabilityMissing, 'the experiments report is off (gateway.experiments.report)'));
  }
  return Promise.resolve(fed.experiments.report(fed.settings.experiments));
}
