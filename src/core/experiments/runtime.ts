/**
 * The live side of experiments on one gateway replica: which experiment a request falls in, the
 * shadow gates (concurrency and budget), the ledger behind the outcome report, and the hooks that
 * feed metrics. Everything here is per replica by design: assignment is a pure function of the
 * request (assignment.ts) and attribution travels in signed tokens (attribution.ts), so replicas
 * never need each other's state.
 */
import type { JsonObject } from '../protocol/jsonrpc.js';
import type { ExperimentConfig, ExperimentsConfig, ShadowExperiment } from './arms.js';
import { assign, type Assignment, type RequestView } from './assignment.js';
import { composeHooks, type ExperimentHooks } from './hooks.js';
import { ExperimentLedger } from './ledger.js';
import { ShadowGate } from './shadow-gate.js';

export interface Chosen {
  experiment: ExperimentConfig;
  assignment: Assignment;
}

/** How many attribution tokens a replica remembers, so one impression is credited once. */
const REMEMBERED_TOKENS = 50_000;

export class ExperimentRuntime {
  readonly ledger = new ExperimentLedger();
  readonly hooks: Required<ExperimentHooks>;
  /** Keyed by the experiment's config value: a reload that changes an experiment starts fresh limits. */
  private readonly gates = new WeakMap<ShadowExperiment, ShadowGate>();
  private readonly credited = new Set<string>();

  constructor(
    external: ExperimentHooks = {},
    private readonly clock: () => number = () => performance.now(),
  ) {
    this.hooks = composeHooks(this.ledger, external);
  }

  /**
   * The first experiment of the list that takes the request (a request is in at most one), or
   * undefined. Throws -32602 for a forced arm the experiment lacks (assignment.ts).
   */
  choose(section: ExperimentsConfig, request: RequestView): Chosen | undefined {
    for (const experiment of section.list) {
      const assignment = assign(experiment, request);
      if (assignment !== undefined) return { experiment, assignment };
    }
    return undefined;
  }

  /** The shadow gate of `experiment` on this replica. */
  gate(experiment: ShadowExperiment): ShadowGate {
    let gate = this.gates.get(experiment);
    if (!gate) {
      gate = new ShadowGate(experiment, this.clock());
      this.gates.set(experiment, gate);
    }
    return gate;
  }

  now(): number {
    return this.clock();
  }

  /**
   * True the first time this replica sees `token` (verified: attribution.ts): feedback for one
   * impression is credited once here (and forwarded every time). Oldest tokens are forgotten
   * first past a fixed count. A token is remembered by its signature, a MAC of the whole body
   * in one canonical spelling: the token itself grows with k and the hit ids, and V8 hashes a
   * string past 16,383 characters by its length alone, so a set of long tokens became one hash
   * chain (35 ms a feedback at 6,000 held) and hundreds of megabytes.
   */
  firstCredit(token: string): boolean {
    const key = token.slice(token.lastIndexOf('.') + 1);
    if (this.credited.has(key)) return false;
    if (this.credited.size >= REMEMBERED_TOKENS) this.credited.delete(this.credited.values().next().value!);
    this.credited.add(key);
    return true;
  }

  report(section: ExperimentsConfig | undefined): JsonObject {
    return this.ledger.report(section?.list ?? []);
  }
}
