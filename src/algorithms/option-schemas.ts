/**
 * The options each registered part accepts, as strict zod schemas: what a config may put in
 * `algorithm.advantageOptions`, `lossOptions`, `groupFilterOptions` and `promptSelectorOptions`
 * for that part. An unknown key is an error that lists the known ones (see `parsePartOptions`).
 *
 * Is: the user-facing tunables only. Options the trainer fills in itself (aggregation, KL
 * coefficient and estimator, global token counts, mismatch correction) are not here.
 * Is not: the defaults' source of truth — each function documents and applies its own defaults;
 * the schemas only check names, types and ranges before any compute.
 */
import { z } from 'zod';

const epsilon = z.number().nonnegative().describe('added to the standard deviation before dividing');
const std = z.enum(['sample', 'population']).describe("'sample' (N−1) or 'population' (N)");
const singletonGroup = z.enum(['raw', 'zero']).describe("a group with one scored sample: 'raw' (A = r) or 'zero'");
const unitAlpha = z.number().min(0).max(1);

/** Advantage estimator options, by estimator name. */
export const advantageOptionSchemas = {
  grpo: z.object({ epsilon, std, singletonGroup }).partial().strict(),
  'dr-grpo': z.object({ singletonGroup, std }).partial().strict(),
  rloo: z.object({ singletonGroup, std }).partial().strict(),
  'batch-std': z.object({ epsilon, std, singletonGroup }).partial().strict(),
  'mc-grpo': z.object({ epsilon, madFloor: z.number().nonnegative(), rescaleNonzero: z.boolean() }).partial().strict(),
  ngrpo: z
    .object({ epsilon, std, virtualReward: z.number(), virtualCount: z.number().int().nonnegative() })
    .partial()
    .strict(),
  gdpo: z.object({ epsilon }).partial().strict(),
  stratified: z
    .object({
      alpha: unitAlpha.describe(
        'the blend weight α in [0, 1] of the within-stratum z-score; the paper gives no verified default',
      ),
      strataFrom: z
        .string()
        .regex(
          /^(row\.[^.]+|rollout\.(toolCalls|truncated|turns))$/,
          'use "row.<column>" or "rollout.toolCalls" / "rollout.turns" / "rollout.truncated"',
        )
        .describe(
          'where each sample\'s stratum key comes from: "row.<column>", "rollout.toolCalls", "rollout.turns" or "rollout.truncated"',
        ),
      epsilon: epsilon.optional(),
    })
    .strict(),
  'seed-grpo': z
    .object({
      alpha: unitAlpha.describe(
        'the weight α in [0, 1] of the semantic-entropy scaling; the paper gives no verified default',
      ),
      clusterBy: z
        .enum(['answer', 'text'])
        .default('answer')
        .describe("'answer': equivalent final answers (math-verify rules); 'text': identical trimmed text"),
      singletonGroup: singletonGroup.optional(),
    })
    .strict(),
  's-grpo': z.object({ singletonGroup }).partial().strict(),
  tree: z.object({}).strict(),
  'single-stream': z
    .object({
      epsilon: epsilon.optional(),
      std: std.optional(),
      batchNormalize: z.boolean().optional(),
      halfLifeKl: z
        .number()
        .positive()
        .default(0.06)
        .describe('D_half: the policy KL at which old evidence counts half (SPO)'),
      minDiscount: z.number().gt(0).lt(1).default(0.875).describe('ρ_min: the strongest forgetting per visit'),
      maxDiscount: z.number().gt(0).lt(1).default(0.96).describe('ρ_max: the weakest forgetting per visit'),
    })
    .strict(),
} as const;

const epsilonLow = z.number().min(0).max(1);
const epsilonHigh = z.number().nonnegative();
const bounds = z.tuple([z.number().nonnegative(), z.number().nonnegative()]);
/** Options every per-token loss accepts on top of its own. */
const commonLoss = {
  topEntropyQuantile: z.number().gt(0).max(1).optional().describe('keep only tokens in the top entropy quantile'),
  klOffPolicyCorrection: z.boolean().optional().describe('multiply the KL term by π_θ/π_old (DeepSeek-V3.2)'),
};

/** Policy loss options, by loss name. */
export const lossOptionSchemas = {
  'ppo-clip': z
    .object({ epsilonLow, epsilonHigh, dualClip: z.number().gt(1) })
    .partial()
    .extend(commonLoss)
    .strict(),
  cispo: z
    .object({ epsilonLow, epsilonHigh, capMode: z.enum(['relative', 'absolute']) })
    .partial()
    .extend(commonLoss)
    .strict(),
  dispo: z
    .object({
      positiveBounds: bounds.describe(
        '[ε_down, ε_up] for tokens of positive-advantage completions; the paper gives no defaults',
      ),
      negativeBounds: bounds.describe('[ε_down, ε_up] for tokens of negative-advantage completions'),
      maskOutside: z.boolean().optional(),
    })
    .extend(commonLoss)
    .strict(),
  gspo: z.object({ epsilonLow, epsilonHigh }).partial().extend(commonLoss).strict(),
  'gspo-token': z.object({ epsilonLow, epsilonHigh }).partial().extend(commonLoss).strict(),
  real: z.object({ temperature: z.number().positive() }).partial().strict(),
  reinforce: z.object({}).extend(commonLoss).strict(),
  gtpo: z
    .object({
      positiveWeight: z.number().nonnegative(),
      negativeWeight: z.number().nonnegative(),
      direction: z.enum(['forward', 'backward', 'both']),
      entropyThreshold: z
        .number()
        .nonnegative()
        .describe('completions with mean token entropy above this get A = 0 (default 0.7)'),
      entropyCoefficient: z.number().nonnegative().describe('otherwise A ← A − coefficient·H (default 0.1)'),
    })
    .partial()
    .extend(commonLoss)
    .strict(),
} as const;

/** Group filter options, by filter name. */
export const groupFilterOptionSchemas = {
  'dynamic-sampling': z.object({}).strict(),
  'drop-all-correct': z.object({ correctThreshold: z.number() }).partial().strict(),
  'mask-truncated': z.object({}).strict(),
} as const;

/** Prompt selector options, by selector name (the trainer derives budgets from the step size). */
export const promptSelectorOptionSchemas = {
  knapsack: z
    .object({
      allowedCounts: z
        .array(z.number().int().positive())
        .min(1)
        .optional()
        .describe('rollouts a prompt may get (default 2, 4, …, 2·groupSize)'),
      successThreshold: z.number().default(0.5),
      decay: z.number().min(0).max(1).default(1),
    })
    .strict(),
  vade: z
    .object({
      candidates: z
        .number()
        .int()
        .positive()
        .optional()
        .describe('prompts drawn as candidates per step (default 4 × promptsPerStep)'),
      thompson: z.boolean().default(true).describe('score a Beta draw (true) or the posterior mean (false)'),
      successThreshold: z.number().default(0.5),
      decay: z.number().min(0).max(1).default(1),
    })
    .strict(),
} as const;

const gamma = z.number().min(0).max(1).describe('the discount γ over later turns');
const turnNormalization = z
  .enum(['mean-std', 'mean'])
  .describe("'mean-std' ((x − mean)/(std + 1e-6)) or 'mean' (x − mean, F_norm = 1)");

/** Turn-credit estimator options, by estimator name (`algorithm.turnCredit.options`). */
export const turnCreditOptionSchemas = {
  'turn-rewards': z.object({ gamma, normalization: turnNormalization }).partial().strict(),
  igpo: z
    .object({
      gamma,
      normalization: turnNormalization,
      pooling: z
        .enum(['joint', 'separate'])
        .describe("'joint': IG and outcome rewards normalised together; 'separate': each kind on its own"),
    })
    .partial()
    .strict(),
  gigpo: z
    .object({
      gamma,
      omega: z.number().nonnegative().describe('ω, the weight of the step-level advantage'),
      normalization: turnNormalization,
    })
    .partial()
    .strict(),
} as const;

/**
 * Parses `options` with a part's schema; every problem is one line naming `field.key`, and an
 * unknown key lists the keys the part knows.
 */
export function parsePartOptions<T>(schema: z.ZodType<T>, options: unknown, field: string, part: string): T {
  const parsed = schema.safeParse(options ?? {});
  if (parsed.success) return parsed.data;
  const known = schema instanceof z.ZodObject ? Object.keys(schema.shape) : [];
  const lines = parsed.error.issues.map((issue) => {
    if (issue.code === 'unrecognized_keys') {
      return `${field}: ${part} has no option ${issue.keys.map((key) => `"${key}"`).join(', ')}; known: ${known.join(', ') || '(none)'}`;
    }
    const where = [field, ...issue.path.map(String)].join('.');
    if (issue.code === 'invalid_type' && issue.message.endsWith('received undefined')) {
      const description =
        schema instanceof z.ZodObject
          ? (schema.shape[String(issue.path[0])] as z.ZodType | undefined)?.description
          : undefined;
      return `${where}: ${part} needs this option${description ? ` (${description})` : ''}`;
    }
    return `${where}: ${issue.message} (for ${part})`;
  });
  throw new Error(lines.join('\n'));
}
