/**
 * Prompt selection before rollout: Knapsack rollout-budget allocation and VADE-style Beta-posterior
 * (Thompson) prompt selection, both from per-prompt success statistics.
 *
 * Is: pure functions with the shared `PromptSelectorFn` signature: per-prompt Beta posteriors in,
 * rollouts per prompt out (0 = prompt not sampled this step), plus the posterior update.
 * Is not: the sampler or the dataset; the trainer keeps the posteriors and acts on the counts.
 */
import { type Part, definePart } from './registry.js';
import { z } from 'zod';

/** What every prompt selector receives: a Beta(α, β) success posterior per candidate prompt. */
export interface PromptSelectorInput {
  /** [P] α of each prompt's Beta posterior (successes + prior). */
  alpha: ArrayLike<number>;
  /** [P] β of each prompt's Beta posterior (failures + prior). */
  beta: ArrayLike<number>;
}

/** Tunables of the registered selectors. */
export interface PromptSelectorOptions {
  /** Knapsack: total rollouts B for the step. */
  budget?: number;
  /** Knapsack: the allowed rollout counts per prompt (default [2, 4, 6, 8]). */
  allowedCounts?: readonly number[];
  /** VADE: number of prompts to select. */
  promptCount?: number;
  /** VADE: rollouts given to each selected prompt (default 8). */
  rolloutsPerPrompt?: number;
  /** VADE: seed for the Beta draws; omit to score posterior means deterministically. */
  seed?: number;
}

/** How many rollouts each prompt gets, and the score that decided it. */
export interface PromptSelection {
  /** [P] rollouts per prompt (0 = skipped). */
  rolloutCounts: Int32Array;
  /** [P] the selector's per-prompt score (knapsack: value at the chosen count; VADE: p̃(1−p̃)). */
  scores: Float64Array;
}

/** The one signature of every registered prompt selector. */
export type PromptSelectorFn = (input: PromptSelectorInput, options?: PromptSelectorOptions) => PromptSelection;

/** What a step tells a prompt selector's `plan`: its size and the seed of this step's draws. */
export interface SelectorStep {
  promptsPerStep: number;
  groupSize: number;
  seed?: number;
}

/** How a selector acts on a step: candidates drawn, the largest group it can give, and its call's options. */
export interface SelectorPlan {
  /** Prompts drawn uniformly as candidates before the selector chooses. */
  candidates: number;
  /** The most rollouts one prompt can get (micro-batches of whole-group losses must hold it). */
  largestGroup: number;
  /** The options the step passes to the selector's function. */
  options: PromptSelectorOptions;
}

/** A prompt selector's entry: besides the function, how it turns its config options and the step into a call. */
export interface PromptSelectorPart extends Part<PromptSelectorFn> {
  plan: (options: Record<string, unknown>, step: SelectorStep) => SelectorPlan;
}

/** A prompt selector's file exports its function with this entry (`algorithm.promptSelector`). */
export const definePromptSelector = (entry: Omit<PromptSelectorPart, 'kind'>): PromptSelectorPart =>
  definePart<PromptSelectorFn, Pick<PromptSelectorPart, 'plan'>>('prompt selector', entry);

/** Knapsack's default rollout counts: 2, 4, …, 2·G (even sizes around the configured G). */
export function defaultKnapsackCounts(groupSize: number): number[] {
  return Array.from({ length: groupSize }, (_, i) => 2 * (i + 1));
}

function posteriorMeans(input: PromptSelectorInput): Float64Array {
  if (input.alpha.length !== input.beta.length)
    throw new RangeError(`alpha has ${input.alpha.length} entries but beta has ${input.beta.length}.`);
  return Float64Array.from({ length: input.alpha.length }, (_, i) => {
    const a = input.alpha[i];
    const b = input.beta[i];
    if (!(a > 0 && b > 0))
      throw new RangeError(`Beta posterior of prompt ${i} must have alpha > 0 and beta > 0, got (${a}, ${b}).`);
    return a / (a + b);
  });
}

/** Probability that N rollouts at success rate p are neither all right nor all wrong: 1 − p^N − (1−p)^N. */
export function nonzeroGradientProbability(rolloutCount: number, successRate: number): number {
  return 1 - successRate ** rolloutCount - (1 - successRate) ** rolloutCount;
}

/** Knapsack RL value of giving `rolloutCount` rollouts to a prompt: P_nz(N, p)·p(1−p)². */
export function knapsackValue(rolloutCount: number, successRate: number): number {
  return nonzeroGradientProbability(rolloutCount, successRate) * successRate * (1 - successRate) ** 2;
}

/**
 * Knapsack budget allocation by exact dynamic programming: maximise Σ_i P_nz(N_i, p_i)·p_i(1−p_i)²
 * subject to Σ N_i ≤ B, N_i from `allowedCounts` (each prompt gets one); p_i is the posterior mean.
 * Knapsack RL (#258, arXiv 2509.25849); value formula from secondary summaries [P].
 */
export function knapsackAllocation(input: PromptSelectorInput, options: PromptSelectorOptions = {}): PromptSelection {
  const rates = posteriorMeans(input);
  const budget = options.budget;
  const allowed = [...(options.allowedCounts ?? [2, 4, 6, 8])].sort((a, b) => a - b);
  if (budget === undefined || !Number.isInteger(budget) || budget < 0)
    throw new RangeError(`knapsack needs options.budget as a non-negative integer, got ${budget}.`);
  if (allowed.length === 0 || allowed.some((n) => !Number.isInteger(n) || n < 0))
    throw new RangeError('options.allowedCounts must be non-negative integers.');
  if (rates.length * allowed[0] > budget)
    throw new RangeError(`budget ${budget} cannot give ${rates.length} prompts even ${allowed[0]} rollouts each.`);
  // best[i][b]: the best total value of prompts i.. with b rollouts left; choice[i][b] the count taken.
  const P = rates.length;
  const best = Array.from({ length: P + 1 }, () => new Float64Array(budget + 1));
  const choice = Array.from({ length: P }, () => new Int32Array(budget + 1).fill(-1));
  for (let i = P - 1; i >= 0; i--) {
    for (let b = 0; b <= budget; b++) {
      best[i][b] = -Infinity;
      for (const n of allowed) {
        if (n > b || best[i + 1][b - n] === -Infinity) continue;
        const value = knapsackValue(n, rates[i]) + best[i + 1][b - n];
        if (value > best[i][b] + 1e-15) {
          best[i][b] = value;
          choice[i][b] = n;
        }
      }
    }
  }
  const rolloutCounts = new Int32Array(P);
  const scores = new Float64Array(P);
  let left = budget;
  for (let i = 0; i < P; i++) {
    rolloutCounts[i] = choice[i][left];
    scores[i] = knapsackValue(rolloutCounts[i], rates[i]);
    left -= rolloutCounts[i];
  }
  return { rolloutCounts, scores };
}

/** `algorithm.promptSelector: knapsack`: the entry `grpo list` prints and configs name. */
export const knapsackAllocationPart = definePromptSelector({
  name: 'knapsack',
  fn: knapsackAllocation,
  description: 'rollouts per prompt maximising Σ P_nz(N,p)·p(1−p)² under a budget (exact DP)',
  citation: 'Knapsack RL (#258), arXiv 2509.25849',
  options: z
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
  // The step's budget is promptsPerStep × groupSize rollouts, spread over as many candidate prompts.
  plan: (options, { promptsPerStep, groupSize }) => {
    const allowedCounts = (options.allowedCounts as number[] | undefined) ?? defaultKnapsackCounts(groupSize);
    return {
      candidates: promptsPerStep,
      largestGroup: Math.max(...allowedCounts),
      options: { budget: promptsPerStep * groupSize, allowedCounts },
    };
  },
  refuses: (options, settings) => {
    const problems: string[] = [];
    const P = settings.promptsPerStep;
    const counts = (options.allowedCounts as number[] | undefined) ?? defaultKnapsackCounts(settings.groupSize);
    const budget = P * settings.groupSize;
    if (Math.min(...counts) * P > budget)
      problems.push(
        `algorithm.promptSelectorOptions.allowedCounts: knapsack must give each of the ${P} prompts at least ${Math.min(...counts)} rollouts, more than the budget of ${budget} (promptsPerStep × groupSize)`,
      );
    // Serial exits and tracked per-prompt values both fix what a group is; a varying size breaks them.
    if (settings.advantage.needs.some((need) => need === 'serialRollout' || need === 'baselines'))
      problems.push(
        `algorithm.promptSelector: knapsack varies the group size per prompt, which ${settings.advantage.name} does not use; choose vade or null`,
      );
    return problems;
  },
});

/** mulberry32: a small seeded uniform generator, so VADE draws repeat with the seed. */
function seededUniform(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Gamma(shape, 1) draw (Marsaglia–Tsang; shape < 1 boosted by U^(1/shape)). */
function sampleGamma(shape: number, uniform: () => number): number {
  if (shape < 1) return sampleGamma(shape + 1, uniform) * uniform() ** (1 / shape);
  const d = shape - 1 / 3;
  const c = 1 / Math.sqrt(9 * d);
  for (;;) {
    let x: number;
    let v: number;
    do {
      // Box–Muller normal from two uniforms (1 − u avoids log(0)).
      x = Math.sqrt(-2 * Math.log(1 - uniform())) * Math.cos(2 * Math.PI * uniform());
      v = 1 + c * x;
    } while (v <= 0);
    v = v * v * v;
    const u = 1 - uniform();
    if (Math.log(u) < 0.5 * x * x + d - d * v + d * Math.log(v)) return d * v;
  }
}

/** One Beta(α, β) draw from a seeded uniform source. */
export function sampleBeta(alpha: number, beta: number, uniform: () => number): number {
  const x = sampleGamma(alpha, uniform);
  const y = sampleGamma(beta, uniform);
  return x / (x + y);
}

/**
 * VADE-style selection: score each prompt by p̃(1−p̃) with p̃ ~ Beta(α, β) (Thompson draw, seeded) or
 * the posterior mean when no seed is given, and give the top `promptCount` prompts
 * `rolloutsPerPrompt` rollouts each (ties to the lower index). VADE (#262); formula inferred [I].
 */
export function vadeSelection(input: PromptSelectorInput, options: PromptSelectorOptions = {}): PromptSelection {
  const means = posteriorMeans(input);
  const promptCount = options.promptCount ?? means.length;
  const rolloutsPerPrompt = options.rolloutsPerPrompt ?? 8;
  if (!Number.isInteger(promptCount) || promptCount < 0)
    throw new RangeError(`options.promptCount must be a non-negative integer, got ${promptCount}.`);
  const uniform = options.seed === undefined ? undefined : seededUniform(options.seed);
  const scores = means.map((mean, i) => {
    const p = uniform === undefined ? mean : sampleBeta(input.alpha[i], input.beta[i], uniform);
    return p * (1 - p);
  });
  const order = Array.from(scores.keys()).sort((a, b) => scores[b] - scores[a] || a - b);
  const rolloutCounts = new Int32Array(means.length);
  for (const i of order.slice(0, promptCount)) rolloutCounts[i] = rolloutsPerPrompt;
  return { rolloutCounts, scores };
}

/** `algorithm.promptSelector: vade`: the entry `grpo list` prints and configs name. */
export const vadeSelectionPart = definePromptSelector({
  name: 'vade',
  fn: vadeSelection,
  description: 'top-k prompts by p̃(1−p̃), p̃ ~ Beta posterior (Thompson) or its mean',
  citation: 'VADE (#262), from the abstract',
  options: z
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
  // Draws more candidates than it keeps, and gives each kept prompt a full group.
  plan: (options, { promptsPerStep, groupSize, seed }) => ({
    candidates: (options.candidates as number | undefined) ?? 4 * promptsPerStep,
    largestGroup: groupSize,
    options: {
      promptCount: promptsPerStep,
      rolloutsPerPrompt: groupSize,
      seed: options.thompson === false ? undefined : seed,
    },
  }),
});

/** Posterior update with decay: α ← λ·α + successes + (1−λ)·α₀, β likewise (λ = 1: no forgetting). */
export function updateBetaPosterior(
  posterior: { alpha: number; beta: number },
  successes: number,
  failures: number,
  decay = 1,
  prior: { alpha: number; beta: number } = { alpha: 1, beta: 1 },
): { alpha: number; beta: number } {
  if (!(decay >= 0 && decay <= 1)) throw new RangeError(`decay must be in [0, 1], got ${decay}.`);
  return {
    alpha: decay * posterior.alpha + (1 - decay) * prior.alpha + successes,
    beta: decay * posterior.beta + (1 - decay) * prior.beta + failures,
  };
}
