/**
 * SmartSearch's composite reward (#164; Wen, Dong, Dou 2026, "SmartSearch: Process Reward-Guided
 * Query Refinement for Search Agents", arXiv 2601.04888, §4.4 Eq. 16–17): the final answer's
 * correctness shifted by the episode's query scores — a right answer loses γ per low-quality query
 * (down to φ_min), a wrong one gains γ per high-quality query (up to φ_max).
 *
 * Is: a reward over a multi-turn episode whose search calls were scored S_t ∈ {0, 1} by the
 * environment (`scoreToolCalls`, e.g. `smartSearchEnvironment`: novelty by document overlap and
 * usefulness, Eq. 8–11). Is not: the scorer itself, the paper's format term λ·r_format (a reward of
 * its own beside this one, with weight λ), nor its query-refinement rollout.
 */
import { z } from 'zod';
import { define, type RewardFactory } from './factory-registry.js';
import type { RewardFn, RewardInput } from './types.js';
import {
  namedReward,
  perCompletionColumns,
  perCompletionReward,
  type ColumnsOfReward,
  type CreateReward,
} from './named-reward.js';

/** Options of {@link smartSearchReward}. */
export interface SmartSearchRewardOptions {
  /** r_outcome: the final answer's correctness; ≥ 0.5 counts as right (the paper's is 0/1 exact match). */
  correctness: RewardFn;
  /** γ: the reward each scored query moves (the paper gives no value). */
  gamma: number;
  /** φ_min: the least a right answer can score (the paper gives no value). */
  phiMin: number;
  /** φ_max: the most a wrong answer can score (the paper gives no value). */
  phiMax: number;
}

/**
 * Eq. 17: max(1 − γ·n_wrong, φ_min) when the answer is right, min(0 + γ·n_correct, φ_max) when not.
 * @example smartSearchComposite(true, 2, 1, { gamma: 0.1, phiMin: 0.5, phiMax: 0.3 }) // 0.9
 */
export function smartSearchComposite(
  right: boolean,
  highQuality: number,
  lowQuality: number,
  { gamma, phiMin, phiMax }: Pick<SmartSearchRewardOptions, 'gamma' | 'phiMin' | 'phiMax'>,
): number {
  return right ? Math.max(1 - gamma * lowQuality, phiMin) : Math.min(0 + gamma * highQuality, phiMax);
}

/** n_correct and n_wrong: the episode's calls scored 1 and scored 0; unscored calls (null) count in neither. */
function queryCounts(input: RewardInput): { highQuality: number; lowQuality: number } {
  if (input.episode === undefined)
    throw new Error(
      'smartsearch: the input has no episode (input.episode.toolCalls); it needs a multi-turn agent rollout.',
    );
  const calls = input.episode.toolCalls;
  // Calls whose reward is absent (not null) were never scored: the environment has no scoreToolCalls.
  if (calls.length > 0 && calls.every((call) => call.reward === undefined))
    throw new Error(
      "smartsearch: the episode's tool calls carry no scores; the environment must score them (scoreToolCalls), e.g. smartSearchEnvironment.",
    );
  let highQuality = 0;
  let lowQuality = 0;
  for (const call of calls) {
    if (call.reward === undefined || call.reward === null) continue;
    if (call.reward !== 0 && call.reward !== 1)
      throw new Error(`smartsearch: a query score S_t must be 0 or 1, got ${call.reward} (call "${call.name}").`);
    if (call.reward === 1) highQuality++;
    else lowQuality++;
  }
  return { highQuality, lowQuality };
}

/**
 * SmartSearch's r_composite (Eq. 17) over the episode's scored queries and the answer's correctness.
 * @example smartSearchReward({ correctness: exactMatch({ tag: 'answer' }), gamma: 0.1, phiMin: 0.5, phiMax: 0.3 })
 */
export function smartSearchReward(options: SmartSearchRewardOptions): RewardFn {
  const { correctness, gamma, phiMin, phiMax } = options;
  for (const [key, value] of Object.entries({ gamma, phiMin, phiMax }))
    if (!Number.isFinite(value)) throw new RangeError(`smartsearch: ${key} must be a finite number, got ${value}.`);
  return async (input) => {
    const { highQuality, lowQuality } = queryCounts(input);
    const right = ((await correctness(input)) ?? 0) >= 0.5;
    return smartSearchComposite(right, highQuality, lowQuality, options);
  };
}

/** The default check: exact match on the `<answer>` content (as tool-efficiency). */
const exactAnswer = { name: 'exact-match', options: { tag: 'answer' } };

/**
 * The registry entry. γ, φ_min and φ_max have no published values, so they are required. The
 * correctness is a reward by name; unnamed, the run's task check when training, else `exact-match`
 * on the `<answer>` content (as `tool-efficiency`).
 */
export function smartSearchFactory(createReward: CreateReward, columnsOfReward: ColumnsOfReward): RewardFactory {
  const factory = define(
    'smartsearch',
    "SmartSearch r_composite: right answer max(1 − γ·n_wrong, φ_min), wrong min(γ·n_correct, φ_max), n over the episode's search calls scored 0/1 by the environment (smartSearchEnvironment)",
    'SmartSearch, Wen et al. 2026, arXiv 2601.04888 Eq. 16–17 (#164); docs/paper-recipes.md "SmartSearch"',
    z
      .object({
        gamma: z.number().finite(),
        phiMin: z.number().finite(),
        phiMax: z.number().finite(),
        correctness: namedReward.optional(),
      })
      .strict(),
    ({ correctness, ...numbers }, context) =>
      smartSearchReward({
        correctness: perCompletionReward(createReward, 'smartsearch', 'correctness', correctness, context, exactAnswer),
        ...numbers,
      }),
    ({ correctness }, context) =>
      perCompletionColumns(columnsOfReward, 'correctness', correctness, context, exactAnswer),
  );
  return { ...factory, needsToolCalls: true };
}
