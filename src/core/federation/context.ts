/**
 * What the federation code needs from the gateway: the live engine set, settings, identity.
 * A value, so a reload can swap it while in-flight calls keep the set they started with.
 */
import type { GatewaySettings } from '../config/schema.js';
import type { Logger } from '../observability/logger.js';
import type { ResilienceHooks } from '../observability/hooks.js';
import type { Engine } from '../upstream/engine.js';
import type { RetryBudget } from '../resilience/retry.js';
import type { ExperimentHooks } from '../experiments/hooks.js';
import type { ExperimentRuntime } from '../experiments/runtime.js';

export interface FederationHooks extends ResilienceHooks, ExperimentHooks {
  onLeg?: (engine: string, method: string, code: number, durationMs: number) => void;
  onDegraded?: (engine: string, reason: string) => void;
  onFanout?: (method: string, width: number) => void;
  onProgressFrame?: () => void;
}

export interface FederationContext {
  engines: readonly Engine[];
  settings: GatewaySettings;
  logger: Logger;
  /** The gateway's identity for loop detection (§16.2). */
  identity: string;
  hooks: FederationHooks;
  /** The gateway-wide retry budget (resilience/retry.ts); absent = no retries. */
  retryBudget?: RetryBudget;
  /** Live experiments on this replica (core/experiments/runtime.ts); absent = none served. */
  experiments?: ExperimentRuntime;
}

export interface DegradedEntry {
  engine: string;
  code: number;
  reason: string;
  detail?: string;
}
