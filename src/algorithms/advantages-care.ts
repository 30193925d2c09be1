/**
 * GRPO-CARE's advantage (#24, arXiv 2506.16141): a consistency bonus for answers that are both right
 * and likely under a slowly moving reference model, added to the reward before the GRPO z-score.
 * Per group, with a = the accuracy reward's score and c = exp(mean log π_ref over the answer's tokens),
 * clamped to at most 0.95:
 * - a sample is accurate when a > 0.1 and a ≥ the group's mean a;
 * - it is consistent when c ≥ (mean c over the accurate samples) − 0.01;
 * - accurate and consistent samples get a bonus of 0.5·a: R = r + 0.5·a.
 *
 * Is: the estimator and its entry, exact to the authors' code (TencentARC/GRPO-CARE
 * `src/r1-v/src/open_r1/trainer/grpo_trainer_ref_ema.py`, `compute_loss` with use_care, and the
 * settings of `scripts/run_grpo_care_margin0.01_video_r1.sh`: bonus_coefficient 0.5,
 * confidence_upper_bound 0.95, consistency_margin 0.01; advantages (r − mean)/(std + 1e-4), sample std).
 * The accuracy reward is their first reward function (`rewards_per_func[:, 0]`), here the run's first
 * reward unless `accuracyReward` names another. The answer's tokens are those wholly between the last
 * `<answer>` and the `</answer>` after it. Theirs are found in Qwen2.5-VL's tokens: from the token after
 * the `answer` piece of `<answer>` (so its `>` counts when the tokenizer splits the tag) up to eos − 3
 * (dropping `</answer>`'s three pieces); the tokens differ by tokenizer, the span they mean does not.
 * A completion with no `<answer>` has no answer tokens: mean 0/(0 + 1e-6) = 0, so c = exp(0) clamped,
 * as theirs.
 * Is not: the reference model or its moving average — the run's reference, computed by the trainer
 * (need `referenceTokenLogprobs`); the paper moves it every 10 steps by 0.995 (`algorithm.referenceSync`
 * `{every: 10, mixupAlpha: 0.005}`, which docs/algorithms.md shows).
 */
import { z } from 'zod';
import {
  type AdvantageInput,
  type AdvantageOptions,
  type AdvantageResult,
  defineAdvantageEstimator,
  requireSampleField,
  resolveGroups,
  toRewardArray,
} from './advantages-groups.js';
import { grpoAdvantage } from './advantages.js';
import { epsilonOption, singletonGroupOption, stdOption } from './option-schemas.js';

/** GRPO-CARE's options (and `grpo`'s, for the z-score). */
export interface CareAdvantageOptions {
  /** The run reward whose score is the accuracy a (default: the run's first reward, as the authors' index 0). */
  accuracyReward?: string;
  /** The bonus is this × a (default 0.5, the authors' script; their code's own default is 1). */
  bonusCoefficient?: number;
  /** c is clamped to at most this (default 0.95). */
  confidenceUpperBound?: number;
  /** Consistent means c ≥ mean c of the accurate samples − this (default 0.01). */
  consistencyMargin?: number;
  /** The tags around the answer (default ['<answer>', '</answer>']). */
  answerTags?: [string, string];
}

/** Indices of the completion tokens strictly inside the last `open … close` span of the decoded text. */
export function answerTokenRange(tokenTexts: readonly string[], [open, close]: [string, string]): [number, number] {
  const text = tokenTexts.join('');
  const openAt = text.lastIndexOf(open);
  if (openAt < 0) return [0, 0];
  const bodyStart = openAt + open.length;
  const closeAt = text.indexOf(close, bodyStart);
  const bodyEnd = closeAt < 0 ? text.length : closeAt;
  let first = -1;
  let end = 0;
  let offset = 0;
  tokenTexts.forEach((piece, t) => {
    const start = offset;
    offset += piece.length;
    // A token counts when it lies wholly inside the body; one that shares characters with a tag does not.
    if (start >= bodyStart && offset <= bodyEnd && piece.length > 0) {
      if (first < 0) first = t;
      end = t + 1;
    }
  });
  return first < 0 ? [0, 0] : [first, end];
}

/** c of every sample: exp(Σ answer log π_ref / (count + 1e-6)), clamped to at most `upperBound`. */
export function answerConfidences(
  referenceLogprobs: readonly ArrayLike<number>[],
  tokenTexts: readonly (readonly string[])[],
  tags: [string, string],
  upperBound: number,
): Float64Array {
  return Float64Array.from(referenceLogprobs, (logprobs, i) => {
    const [first, end] = answerTokenRange(tokenTexts[i], tags);
    let sum = 0;
    for (let t = first; t < end; t++) sum += logprobs[t];
    return Math.min(upperBound, Math.exp(sum / (end - first + 1e-6)));
  });
}

/** The GRPO-CARE rewards R = r + bonus of every sample (NaN where unscored). */
export function careRewards(input: AdvantageInput, options: CareAdvantageOptions = {}): Float64Array {
  const {
    bonusCoefficient = 0.5,
    confidenceUpperBound = 0.95,
    consistencyMargin = 0.01,
    answerTags = ['<answer>', '</answer>'],
  } = options;
  const rewards = toRewardArray(input.rewards);
  const N = rewards.length;
  const name = options.accuracyReward ?? input.rewardNames?.[0];
  const column = name === undefined ? -1 : (input.rewardNames?.indexOf(name) ?? -1);
  if (column < 0 || !input.rewardComponents)
    throw new Error(
      `grpo-care: accuracyReward "${name ?? ''}" is not among the rewards (${(input.rewardNames ?? []).join(', ')})`,
    );
  const accuracy = toRewardArray(input.rewardComponents[column], `rewardComponents[${column}]`);
  const reference = requireSampleField(input.referenceLogprobs, 'referenceLogprobs', N, 'grpo-care');
  const texts = requireSampleField(input.tokenTexts, 'tokenTexts', N, 'grpo-care');
  const confidence = answerConfidences(reference, texts, answerTags, confidenceUpperBound);
  const layout = resolveGroups(N, input.groupSizes);
  const out = Float64Array.from(rewards);
  for (let g = 0; g < layout.groupCount; g++) {
    const members: number[] = [];
    for (let i = layout.starts[g]; i < layout.starts[g] + layout.sizes[g]; i++)
      if (Number.isFinite(rewards[i])) members.push(i);
    // An unscored accuracy call counts 0, as a failed verifier does in the authors' reward functions.
    const score = (i: number) => (Number.isFinite(accuracy[i]) ? accuracy[i] : 0);
    const meanAccuracy = members.reduce((total, i) => total + score(i), 0) / members.length;
    const accurate = members.filter((i) => score(i) > 0.1 && score(i) >= meanAccuracy);
    if (accurate.length === 0) continue; // the authors' mean over no sample is NaN: no sample is consistent
    const meanConfidence = accurate.reduce((total, i) => total + confidence[i], 0) / accurate.length;
    for (const i of accurate)
      if (confidence[i] >= meanConfidence - consistencyMargin) out[i] += bonusCoefficient * score(i);
  }
  return out;
}

/**
 * GRPO-CARE advantage: `grpo`'s z-score (sample std, ε = 1e-4 as the authors) of `careRewards`.
 * GRPO-CARE (#24, arXiv 2506.16141); TencentARC/GRPO-CARE grpo_trainer_ref_ema.py.
 */
export function careAdvantage(
  input: AdvantageInput,
  options: AdvantageOptions & CareAdvantageOptions = {},
): AdvantageResult {
  const rewards = Array.from(careRewards(input, options), (r) => (Number.isFinite(r) ? r : null));
  return grpoAdvantage({ ...input, rewards }, { epsilon: 1e-4, ...options });
}

/** `algorithm.advantage: grpo-care`: the entry `grpo list` prints and configs name. */
export const careAdvantagePart = defineAdvantageEstimator({
  name: 'grpo-care',
  fn: careAdvantage,
  description:
    'R = r + 0.5·a for samples with a > 0.1, a ≥ mean_g a and reference answer likelihood ≥ the accurate ones’ mean − 0.01, then grpo (ε = 1e-4)',
  citation: 'GRPO-CARE (#24, arXiv 2506.16141), TencentARC/GRPO-CARE grpo_trainer_ref_ema.py',
  needs: ['rewardComponents', 'referenceTokenLogprobs', 'tokenTexts'],
  options: z
    .object({
      accuracyReward: z.string().min(1).describe("the run reward scoring accuracy (default: the run's first reward)"),
      bonusCoefficient: z.number().nonnegative().describe('the bonus is this × the accuracy (default 0.5)'),
      confidenceUpperBound: z.number().positive().describe('the answer likelihood is clamped to this (default 0.95)'),
      consistencyMargin: z.number().nonnegative().describe('consistent: ≥ the accurate mean − this (default 0.01)'),
      answerTags: z
        .tuple([z.string().min(1), z.string().min(1)])
        .describe("the tags around the answer (default ['<answer>', '</answer>'])"),
      epsilon: epsilonOption,
      std: stdOption,
      singletonGroup: singletonGroupOption,
    })
    .partial()
    .strict(),
  refuses: (options, settings) => {
    const name = options.accuracyReward;
    if (typeof name !== 'string' || settings.rewardNames.includes(name)) return [];
    return [
      `algorithm.advantageOptions.accuracyReward: "${name}" is not a reward of this run (rewards: ${settings.rewardNames.join(', ')})`,
    ];
  },
});
