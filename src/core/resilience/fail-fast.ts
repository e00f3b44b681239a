/**
 * The fail-fast layer: refuses at once a call the engine cannot take now (not initialized, or
 * restarting; its circuit breaker open) so the call never waits for, nor takes, a limiter slot.
 * The breaker layer checks again once a slot is granted (a half-open breaker admits one trial).
 */
import type { Layer } from '../upstream/call.js';
import { UpstreamError } from '../upstream/errors.js';

export interface Admission {
  /** Why the engine cannot take calls now (`not-ready`), or undefined when it can. */
  notReady(): UpstreamError | undefined;
  /** Whether the circuit breaker lets a call through now. */
  readonly breakerAdmits: boolean;
}

export function failFastLayer(admission: Admission): Layer {
  return (next) => (call) => {
    const refusal = admission.notReady();
    if (refusal) return Promise.reject(refusal);
    if (!admission.breakerAdmits) return Promise.reject(new UpstreamError('circuit-open', 'circuit breaker is open'));
    return next(call);
  };
}
