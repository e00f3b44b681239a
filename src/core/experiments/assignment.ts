/**
 * Sticky, stateless assignment of requests to experiments and arms.
 *
 * Every decision is a pure function of (experiment id, assignment key): SHA-256 of
 * `experiment id ‖ 0x00 ‖ key` gives independent uniform numbers in [0, 1) (48 bits each), one
 * for the traffic gate, one for the arm, one for shadow sampling. So every replica, and every
 * restart, puts one key in the same arm with no shared state; hashing with the experiment id
 * keeps different experiments' assignments independent of each other. Arms are taken in name
 * order, so reordering the config does not move anyone.
 *
 * A request may name its arm in `_meta["x-rcpgw"].forceArm` (`{ "<experiment id>": "<arm>" }`,
 * §4.4 vendor key) only when the experiment sets `allowForce: true`; otherwise that key is ignored.
 */
import { sha256 } from '@noble/hashes/sha2.js';
import { utf8ToBytes } from '@noble/hashes/utils.js';
import { RcpError } from '../protocol/errors.js';
import { isJsonObject, type JsonObject } from '../protocol/jsonrpc.js';
import type { AssignmentKeySource, ExperimentConfig, SplitExperiment } from './arms.js';

/** What assignment may read of a request. */
export interface RequestView {
  params: JsonObject;
  /** Lower-cased HTTP headers (empty over stdio). */
  headers: Readonly<Record<string, string>>;
  /** The authenticated client's id, when the request path authenticated one (`assignBy: { principal: true }`). */
  principal?: string | undefined;
}

export interface Assignment {
  experiment: string;
  kind: ExperimentConfig['kind'];
  /** The arm that answers (split: the assigned arm; shadow: the primary; interleave: both, as "a+b"; forced: the forced arm). */
  arm: string;
  /** True when the request chose its arm via `forceArm`. */
  forced: boolean;
  /** Shadow experiments: whether this request also runs the shadow arm. */
  shadowSampled?: boolean;
}

const FORCE_KEY = 'forceArm';
const VENDOR_KEY = 'x-rcpgw';
const SLOT_BYTES = 6; // 48 bits: exact in a double

/** The three uniform numbers in [0, 1) for (experiment, key): [traffic, arm, shadow sample]. */
export function uniformSlots(experimentId: string, key: string): [number, number, number] {
  const digest = sha256(utf8ToBytes(`${experimentId}\u0000${key}`));
  const slot = (index: number): number => {
    let value = 0;
    for (let i = index * SLOT_BYTES; i < (index + 1) * SLOT_BYTES; i++) value = value * 256 + digest[i]!;
    return value / 2 ** (8 * SLOT_BYTES);
  };
  return [slot(0), slot(1), slot(2)];
}

/** The request's assignment key, or undefined when the configured source is absent or empty. */
export function assignmentKeyOf(source: AssignmentKeySource, request: RequestView): string | undefined {
  let value: unknown;
  if ('header' in source) value = request.headers[source.header];
  else if ('param' in source) value = request.params[source.param];
  else if ('principal' in source) value = request.principal;
  else value = isJsonObject(request.params._meta) ? request.params._meta[source.meta] : undefined;
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  return typeof value === 'string' && value.length > 0 ? value : undefined;
}

/** Split: the arm for a uniform number `u`, by the arms' relative shares in name order. */
export function armForUniform(arms: SplitExperiment['arms'], u: number): string {
  const names = Object.keys(arms).sort();
  const total = names.reduce((sum, arm) => sum + arms[arm]!, 0);
  let cumulative = 0;
  for (const arm of names) {
    cumulative += arms[arm]! / total;
    if (u < cumulative) return arm;
  }
  // Rounding can leave the sum a hair under 1: the last arm with a share takes the remainder.
  return names.filter((arm) => arms[arm]! > 0).at(-1)!;
}

/** Every arm `experiment` names (a forced arm serves alone: no shadow run, no interleaving). */
export function armsOf(experiment: ExperimentConfig): string[] {
  if (experiment.kind === 'split') return Object.keys(experiment.arms).sort();
  if (experiment.kind === 'shadow') return [experiment.primary, experiment.shadow];
  return [...experiment.arms];
}

/**
 * The arm a request forces for `experiment`, if it may: undefined when the experiment does not
 * allow forcing or the request names none; -32602 when it names an arm the experiment lacks.
 */
export function forcedArm(experiment: ExperimentConfig, params: JsonObject): string | undefined {
  if (!experiment.allowForce) return undefined;
  const vendor = isJsonObject(params._meta) ? params._meta[VENDOR_KEY] : undefined;
  const force = isJsonObject(vendor) ? vendor[FORCE_KEY] : undefined;
  if (!isJsonObject(force) || !(experiment.id in force)) return undefined;
  const arm = force[experiment.id];
  const allowed = armsOf(experiment);
  if (typeof arm !== 'string' || !allowed.includes(arm)) {
    throw RcpError.invalidParams(
      `_meta.${VENDOR_KEY}.${FORCE_KEY}.${experiment.id}`,
      `expected one of ${allowed.map((a) => `"${a}"`).join(', ')}`,
    );
  }
  return arm;
}

/**
 * Where `experiment` puts this request: undefined when it has no assignment key or falls outside
 * the experiment's traffic share (it is then served as if there were no experiment).
 */
export function assign(experiment: ExperimentConfig, request: RequestView): Assignment | undefined {
  const forced = forcedArm(experiment, request.params);
  if (forced !== undefined) {
    return {
      experiment: experiment.id,
      kind: experiment.kind,
      arm: forced,
      forced: true,
      ...(experiment.kind === 'shadow' ? { shadowSampled: false } : {}),
    };
  }
  const key = assignmentKeyOf(experiment.assignBy, request);
  if (key === undefined) return undefined;
  const [traffic, armSlot, shadowSlot] = uniformSlots(experiment.id, key);
  if (traffic >= experiment.traffic) return undefined;
  const base = { experiment: experiment.id, kind: experiment.kind, forced: false };
  switch (experiment.kind) {
    case 'split':
      return { ...base, arm: armForUniform(experiment.arms, armSlot) };
    case 'shadow':
      return { ...base, arm: experiment.primary, shadowSampled: shadowSlot < experiment.sample };
    case 'interleave':
      return { ...base, arm: experiment.arms.join('+') };
  }
}

/** What an answer's `_meta["x-rcpgw"]` says about the experiment that served it. */
export function assignmentMeta(assignment: Assignment): JsonObject {
  return { experiment: assignment.experiment, arm: assignment.arm, ...(assignment.forced ? { forced: true } : {}) };
}
