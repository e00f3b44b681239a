/**
 * Arms and experiments as config values (`gateway.experiments`), validated with zod so every
 * problem names its path (e.g. `gateway.experiments.list[0].arms: unknown arm "fast"`).
 *
 * An arm is a named retrieval setup: the engines it fans out to and the §16.3 fusion parameters
 * it fuses with. Any parameter an arm leaves out takes the gateway's value (`gateway.fusion`,
 * `gateway.rrfK`, `gateway.dedup`, `gateway.fusionHeadroom`, the engine's configured `weight`).
 * A single-engine arm is simply an arm with one engine.
 *
 * An experiment compares arms on live traffic:
 *  - `split`: each request whose assignment key falls in the experiment's traffic share is
 *    served by one arm, chosen by a stable hash of the key (assignment.ts);
 *  - `shadow`: the primary arm answers; the shadow arm runs on a sampled share of requests
 *    under its own deadline, concurrency cap and budget, and each pair is compared (compare.ts);
 *  - `interleave`: two arms' lists are merged by team draft (interleave.ts) and clients' §7.16
 *    `feedback` credits the arm whose hit was used, through a signed token (attribution.ts).
 */
import { z } from 'zod';
import { durationMs, positiveInt } from '../config/primitives.js';

const name = z
  .string()
  .min(1, 'expected a non-empty name')
  .regex(/^[A-Za-z0-9._:-]+$/, 'expected letters, digits, ".", "_", ":" or "-"');
const share = z.number().finite().min(0, 'expected a share in [0, 1]').max(1, 'expected a share in [0, 1]');

export const FUSION_STRATEGIES = ['rrf', 'weighted', 'convex'] as const;
export const DEDUP_POLICIES = ['id', 'citation.uri', 'content-hash'] as const;

export const ArmSchema = z.strictObject({
  /** Engine ids this arm fans out to (at least one). */
  engines: z.array(name).min(1, 'expected at least one engine id'),
  /** Per-engine weight overrides; an engine left out keeps its configured `weight`. */
  weights: z.record(z.string(), z.number().finite().min(0, 'expected a weight ≥ 0')).optional(),
  fusion: z.enum(FUSION_STRATEGIES).optional(),
  rrfK: z.number().finite().min(0).optional(),
  dedup: z.enum(DEDUP_POLICIES).optional(),
  /** Hits each engine is asked for when k ≤ fusionDepth (gateway.fusionDepth, core/federation/depth.ts). */
  fusionDepth: positiveInt.max(1000).optional(),
  /** Past fusionDepth, each engine is asked for `k × fusionHeadroom` hits. */
  fusionHeadroom: z.number().min(1).max(10).optional(),
});
export type ArmConfig = z.infer<typeof ArmSchema>;

/** Where a request's assignment key is read from: one HTTP header, one params field, or one `_meta` key. */
export const AssignmentKeySchema = z.union([
  z.strictObject({
    header: z
      .string()
      .min(1)
      .transform((h) => h.toLowerCase()),
  }),
  z.strictObject({ param: z.string().min(1) }),
  z.strictObject({ meta: z.string().min(1) }),
  /** The authenticated client (`CallContext.principal.id`) once the request path authenticates one. */
  z.strictObject({ principal: z.literal(true) }),
]);
export type AssignmentKeySource = z.infer<typeof AssignmentKeySchema>;

const common = {
  id: name,
  /** Share of requests (by assignment key) that enter the experiment; the rest are served as usual. */
  traffic: share.default(1),
  /** Let a request name its arm in `_meta["x-rcpgw"].forceArm` (for debugging); off by default. */
  allowForce: z.boolean().default(false),
};

export const SplitSchema = z.strictObject({
  ...common,
  kind: z.literal('split'),
  /** Arm name → relative share of the experiment's traffic (shares need not sum to 1). */
  arms: z.record(name, z.number().finite().min(0, 'expected a share ≥ 0')),
  assignBy: AssignmentKeySchema.default({ header: 'x-rcpgw-user' }),
});

export const ShadowSchema = z.strictObject({
  ...common,
  kind: z.literal('shadow'),
  /** The arm that answers the request. */
  primary: name,
  /** The arm run in the background for comparison; its answer is never returned. */
  shadow: name,
  /** Share of the experiment's requests that also run the shadow arm. */
  sample: share.default(0.1),
  deadlineMs: durationMs.default(2_000),
  /** Shadow calls in flight at once; a request over the cap skips its shadow run. */
  maxConcurrent: positiveInt.default(4),
  /** Shadow runs allowed per minute (a token bucket); 0 = no shadow runs. */
  budgetPerMinute: z.int().min(0).default(600),
  /** Write each comparison as one JSON line to this file (Node runtime; relative to the working directory). */
  comparisonsFile: z.string().min(1).optional(),
  assignBy: AssignmentKeySchema.default({ header: 'x-rcpgw-user' }),
});

export const InterleaveSchema = z.strictObject({
  ...common,
  kind: z.literal('interleave'),
  /** Exactly two arms: their lists are merged by team draft. */
  arms: z.tuple([name, name]),
  assignBy: AssignmentKeySchema.default({ header: 'x-rcpgw-user' }),
});

export const ExperimentSchema = z.discriminatedUnion('kind', [SplitSchema, ShadowSchema, InterleaveSchema]);
export type ExperimentConfig = z.infer<typeof ExperimentSchema>;
export type SplitExperiment = z.infer<typeof SplitSchema>;
export type ShadowExperiment = z.infer<typeof ShadowSchema>;
export type InterleaveExperiment = z.infer<typeof InterleaveSchema>;

export const ExperimentsSchema = z
  .strictObject({
    /** HMAC key for interleaving attribution tokens; required when any experiment interleaves. */
    secret: z.string().min(16, 'expected at least 16 characters').optional(),
    /** An attribution token older than this is stale (feedback then gets -32602). */
    tokenTtlMs: positiveInt.default(86_400_000),
    arms: z.record(name, ArmSchema).default({}),
    /**
     * Answer the vendor method `x-rcpgw/experiments` (the outcome report) on the client port. Off
     * by default, like every admin surface: the report is for operators.
     */
    report: z.boolean().default(false),
    list: z.array(ExperimentSchema).default([]),
  })
  .superRefine((section, ctx) => {
    const seen = new Map<string, number>();
    section.list.forEach((experiment, index) => {
      const at = (...rest: PropertyKey[]): PropertyKey[] => ['list', index, ...rest];
      const first = seen.get(experiment.id);
      if (first !== undefined)
        ctx.addIssue({ code: 'custom', path: at('id'), message: `duplicate experiment id "${experiment.id}" (also list[${first}])` });
      seen.set(experiment.id, index);
      for (const [where, arm] of armReferences(experiment)) {
        if (!Object.hasOwn(section.arms, arm)) ctx.addIssue({ code: 'custom', path: at(...where), message: `unknown arm "${arm}"` });
      }
      if (experiment.kind === 'split') {
        const shares = Object.values(experiment.arms);
        if (shares.length < 2) ctx.addIssue({ code: 'custom', path: at('arms'), message: 'expected at least two arms' });
        if (!shares.some((s) => s > 0))
          ctx.addIssue({ code: 'custom', path: at('arms'), message: 'expected at least one arm with a share > 0' });
      }
      if (experiment.kind === 'shadow' && experiment.primary === experiment.shadow) {
        ctx.addIssue({ code: 'custom', path: at('shadow'), message: 'expected an arm other than the primary' });
      }
      if (experiment.kind === 'interleave') {
        if (experiment.arms[0] === experiment.arms[1])
          ctx.addIssue({ code: 'custom', path: at('arms'), message: 'expected two different arms' });
        if (section.secret === undefined)
          ctx.addIssue({
            code: 'custom',
            path: ['secret'],
            message: `required by interleave experiment "${experiment.id}" (signs attribution tokens)`,
          });
      }
    });
  });
export type ExperimentsConfig = z.infer<typeof ExperimentsSchema>;

/** Every arm name an experiment names, with the path (below the experiment) that names it. */
function armReferences(experiment: ExperimentConfig): Array<[PropertyKey[], string]> {
  switch (experiment.kind) {
    case 'split':
      return Object.keys(experiment.arms).map((arm) => [['arms', arm], arm]);
    case 'shadow':
      return [
        [['primary'], experiment.primary],
        [['shadow'], experiment.shadow],
      ];
    case 'interleave':
      return experiment.arms.map((arm, i) => [['arms', i], arm]);
  }
}

export interface ReferenceProblem {
  path: PropertyKey[];
  message: string;
}

/**
 * Cross-checks against the engine registry, which the experiments section cannot see on its own:
 * every engine an arm names (and every weight it sets) must be a configured engine. Paths are
 * relative to the experiments section.
 */
export function armEngineProblems(
  section: ExperimentsConfig,
  engineIds: ReadonlySet<string> | ReadonlyMap<string, unknown>,
): ReferenceProblem[] {
  const problems: ReferenceProblem[] = [];
  for (const [armName, arm] of Object.entries(section.arms)) {
    arm.engines.forEach((id, i) => {
      if (!engineIds.has(id)) problems.push({ path: ['arms', armName, 'engines', i], message: `unknown engine id "${id}"` });
    });
    for (const id of Object.keys(arm.weights ?? {})) {
      if (!arm.engines.includes(id))
        problems.push({ path: ['arms', armName, 'weights', id], message: `engine "${id}" is not one of this arm's engines` });
    }
  }
  return problems;
}
