/**
 * The retry layer as the federation applies it to one upstream call (a fan-out leg or the
 * single-engine route): the gateway-wide budget, the request's deadline and signal, and a
 * `usage.notes` line plus a metrics hook for every decision. The rules live in upstream/retry.ts.
 */
import type { CallContext } from '../service/contract.js';
import { describeRetry, type RetryGuard } from './retry.js';
import type { Engine } from '../upstream/engine.js';
import type { FederationContext } from '../federation/context.js';

export function retryGuard(method: string, engine: Engine, ctx: CallContext, fed: FederationContext, notes: string[]): RetryGuard {
  return {
    method,
    deadlineAt: ctx.deadlineAt,
    signal: ctx.signal,
    budget: fed.retryBudget,
    reserveMs: fed.settings.deadlineReserveMs,
    backoffMs: fed.settings.retry.backoffMs,
    onDecision: (decision) => {
      notes.push(describeRetry(engine.id, decision));
      if (decision.kind === 'retry') fed.hooks.onRetry?.(engine.id, method);
      else if (decision.why === 'budget') fed.hooks.onRetryBudgetExhausted?.(engine.id, method);
    },
  };
}
