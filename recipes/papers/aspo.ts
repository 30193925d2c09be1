/**
 * ASPO, Advantage Shaping Policy Optimization (#218; Lin and Xu, "Understanding Tool-Integrated
 * Reasoning", arXiv 2508.19201, §3.3 Eq. 2): nudge a tool-using policy to call its tool earlier by
 * shaping the advantage, not the reward. For each response that is correct and calls the tool,
 *   A_i = A_correct,i + clip(δ·(p_i − mean(p))/mean(L), −k·A_correct,i, k·A_correct,i),
 * p the position of the first call and L the response length, both in tokens and both over the
 * group's correct, tool-calling responses; δ < 0 rewards an earlier call. The clip keeps the nudge
 * within a share k of the correctness advantage, so a correct answer never turns negative.
 * Run: `npx tsx src/cli/bin.ts train recipes/papers/aspo.ts` (or `npx grpo train recipes/papers/aspo.ts`).
 *
 * Is: the `aspo` advantage estimator (this file's part) and a recipe that trains the calculator agent
 * of recipes/tool-calculator.ts with it. Followed: the paper's Eq. 2 and its text (no authors' code
 * was found); δ = −2.0 and k = 0.7 are its conservative setting (§4.5; −2.5 and 0.9 the aggressive one).
 * A_correct is the `grpo` z-score of the run's reward (the paper trains with DAPO's group advantage).
 * Is not: the paper's setup (Qwen3-8B writing Python that an interpreter runs). On the calculator task
 * a call opens the answer turn (Llama-3 JSON calls are the whole turn), so first-call positions rarely
 * differ and the shaping seldom moves an advantage: this recipe shows the mechanism end to end, not
 * the behaviour change the paper measures.
 */
import { z } from 'zod';
import {
  type AdvantageInput,
  type AdvantageOptions,
  type AdvantageResult,
  type Recipe,
  defineAdvantageEstimator,
  grpoAdvantage,
  requireSampleField,
  resolveGroups,
  toRewardArray,
} from '../../src/index.js';
import toolCalculator from '../tool-calculator.js';

/** Options of {@link aspoAdvantage}. */
export interface AspoOptions extends AdvantageOptions {
  /** The text that opens a tool call (required): the first token it starts in is p. */
  callMarker?: string;
  /** The reward whose value > 0 marks a correct response (required). */
  correctReward?: string;
  /** δ, the shaping's scale (< 0 favours earlier calls; default −2.0, the paper's conservative setting). */
  delta?: number;
  /** k, the clip as a share of the correctness advantage (default 0.7). */
  clipShare?: number;
}

/** Index of the token in which `marker` first starts, or −1 when the response never writes it. */
export function firstCallPosition(tokenTexts: readonly string[], marker: string): number {
  const offset = tokenTexts.join('').indexOf(marker);
  if (offset < 0) return -1;
  let end = 0;
  for (let t = 0; t < tokenTexts.length; t++) {
    end += tokenTexts[t].length;
    if (offset < end) return t;
  }
  return -1;
}

/**
 * ASPO advantage: A = the `grpo` advantage (options `epsilon`, `std`, `singletonGroup` as there), then
 * for each response that is correct (its `correctReward` > 0) and writes `callMarker`,
 * A += clip(δ·(p − mean p)/mean L, −k·|A|, k·|A|) with p and L (token count) averaged over the group's
 * correct calling responses. The paper's bounds are ±k·A_correct, A_correct > 0 for a correct
 * response; |A| keeps them ordered should a reward make it negative. #218 (arXiv 2508.19201) Eq. 2.
 */
export function aspoAdvantage(input: AdvantageInput, options: AspoOptions = {}): AdvantageResult {
  const { callMarker, correctReward, delta = -2, clipShare = 0.7 } = options;
  if (!callMarker) throw new Error('aspo: options.callMarker (the text that opens a tool call) is required.');
  const base = grpoAdvantage(input, options);
  const rewards = toRewardArray(input.rewards);
  const layout = resolveGroups(rewards.length, input.groupSizes);
  const texts = requireSampleField(input.tokenTexts, 'tokenTexts', rewards.length, 'aspo');
  const column = input.rewardNames?.indexOf(correctReward ?? '') ?? -1;
  if (column < 0 || !input.rewardComponents)
    throw new Error(
      `aspo: correctReward "${correctReward}" is not among the rewards (${input.rewardNames?.join(', ')}).`,
    );
  const correct = toRewardArray(input.rewardComponents[column], `rewardComponents[${column}]`);
  const advantages = Float32Array.from(base.advantages);
  for (let g = 0; g < layout.groupCount; g++) {
    const eligible: { i: number; position: number; length: number }[] = [];
    for (let i = layout.starts[g]; i < layout.starts[g] + layout.sizes[g]; i++) {
      const position = firstCallPosition(texts[i], callMarker);
      if (!Number.isNaN(rewards[i]) && correct[i] > 0 && position >= 0)
        eligible.push({ i, position, length: texts[i].length });
    }
    if (eligible.length === 0) continue;
    const meanPosition = eligible.reduce((sum, e) => sum + e.position, 0) / eligible.length;
    const meanLength = eligible.reduce((sum, e) => sum + e.length, 0) / eligible.length;
    for (const { i, position } of eligible) {
      const bound = clipShare * Math.abs(base.advantages[i]);
      const shaping = (delta * (position - meanPosition)) / meanLength;
      advantages[i] = base.advantages[i] + Math.min(bound, Math.max(-bound, shaping));
    }
  }
  return { ...base, advantages };
}

/** `algorithm.advantage: aspo` (registered when this recipe loads). */
export const aspoAdvantagePart = defineAdvantageEstimator({
  name: 'aspo',
  fn: aspoAdvantage,
  description:
    'grpo advantage + clip(δ·(p − mean p)/mean L, ±k·A) for correct tool-calling responses, p = first-call token, δ = −2, k = 0.7',
  citation: 'ASPO (#218), Lin and Xu, arXiv 2508.19201 §3.3 Eq. 2',
  needs: ['tokenTexts', 'rewardComponents'],
  options: z
    .object({
      callMarker: z.string().min(1).describe('the text that opens a tool call (required)'),
      correctReward: z.string().min(1).describe('the reward whose value > 0 marks a correct response (required)'),
      delta: z.number().describe('δ, the shaping scale; < 0 favours earlier calls (default −2.0)'),
      clipShare: z.number().nonnegative().describe('k, the clip as a share of the correctness advantage (default 0.7)'),
      epsilon: z.number().nonnegative().describe("the grpo advantage's ε (default 1e-6)"),
    })
    .partial()
    .strict(),
  refuses: (options, settings) => [
    ...(typeof options.callMarker === 'string'
      ? []
      : ['algorithm.advantageOptions.callMarker: aspo needs the text that opens a tool call']),
    ...(typeof options.correctReward === 'string' && settings.rewardNames.includes(options.correctReward)
      ? []
      : [
          `algorithm.advantageOptions.correctReward: aspo needs the name of the correctness reward, one of: ${settings.rewardNames.join(', ')}`,
        ]),
  ],
});

export default {
  ...toolCalculator,
  config: {
    ...toolCalculator.config,
    algorithm: {
      advantage: 'aspo',
      advantageOptions: { callMarker: '{"name"', correctReward: 'correct' },
    },
  },
  parts: [aspoAdvantagePart],
} satisfies Recipe;
