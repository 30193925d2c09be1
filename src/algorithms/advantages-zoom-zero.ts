/**
 * Zoom-Zero's token-selective credit assignment (Shen et al. 2025, arXiv 2512.14273, papers #148):
 * each token's score takes the grounding (temporal IoU) reward or the answer reward depending on which
 * part of the completion it is in, then every token is z-scored against all the tokens of its group.
 *
 * Is: the estimator and its entry, exact to the authors' `compute_grpo_select_outcome_advantage`
 * (xiaoqian-shen/Zoom-Zero `verl/trainer/core_algos.py`, adv_estimator `grpo_select`) with the masks of
 * their reward manager (`verl/workers/reward/custom.py`: the span marker's first start, else the last
 * token; the answer span the `answerTokens` tokens before it). Per token t of a completion of L tokens,
 * with m = the marker's start and a = max(0, m − answerTokens):
 *   score_t = (format + zoom + iou·[t < a or t ≥ m] + answer·[a ≤ t < m]) / 3
 *   A_t = (score_t − mean_group) / (std_group + ε), mean and sample std over every token of the group.
 * Is not: the rewards (the run's, named by the options: the paper's are the `<glue>` interval IoU, the
 * answer match, the format and the zoomed-in answer match; recipes/papers/zoom-zero.ts has them).
 */
import { z } from 'zod';
import {
  type AdvantageInput,
  type AdvantageOptions,
  type AdvantageResult,
  defineAdvantageEstimator,
  finishAdvantages,
  requireSampleField,
  resolveGroups,
  toRewardArray,
  zeroStdThreshold,
} from './advantages-groups.js';
import { epsilonOption } from './option-schemas.js';

/** Zoom-Zero's options: which run rewards are its four scores, and where the grounding span starts. */
export interface ZoomZeroAdvantageOptions {
  /** The run reward that is the format score (default 'format'). */
  formatReward?: string;
  /** The run reward that is the temporal IoU (default 'iou'); credited to the thinking and span tokens. */
  iouReward?: string;
  /** The run reward that is the answer match (default 'answer'); credited to the answer tokens. */
  answerReward?: string;
  /** The run reward that is the zoomed-in answer match (default 'zoom'); null: 0, as their code without it. */
  zoomReward?: string | null;
  /** Token ids of the grounding span's marker (required; the authors hard-code [29, 9697] for Qwen2.5-VL). */
  markerIds?: readonly number[];
  /** Tokens before the marker that are the answer (default 5, the authors' `mask_iou − 5`). */
  answerTokens?: number;
}

/** The first index where `marker` starts in `ids`, or −1 (their `find_sublist_indices`). */
function markerStart(ids: ArrayLike<number>, marker: readonly number[]): number {
  for (let i = 0; i + marker.length <= ids.length; i++) if (marker.every((id, k) => ids[i + k] === id)) return i;
  return -1;
}

/** The column of the run reward `name`, raw (before weighting), unscored as 0 like their zero-filled dict. */
function column(input: AdvantageInput, name: string | null, count: number): Float64Array {
  if (name === null) return new Float64Array(count);
  const index = input.rewardNames?.indexOf(name) ?? -1;
  if (index < 0 || !input.rewardComponents)
    throw new Error(`zoom-zero: reward "${name}" is not among the rewards (${(input.rewardNames ?? []).join(', ')})`);
  return toRewardArray(input.rewardComponents[index], `rewardComponents[${index}]`).map((v) =>
    Number.isNaN(v) ? 0 : v,
  );
}

/**
 * Zoom-Zero token-level advantages. A sample whose combined reward is unscored (null) gets zeros and
 * leaves its group's statistics; a group of one scored sample uses mean 0 and std 1 (their code).
 */
export function zoomZeroAdvantage(
  input: AdvantageInput,
  options: AdvantageOptions & ZoomZeroAdvantageOptions = {},
): AdvantageResult {
  const { formatReward = 'format', iouReward = 'iou', answerReward = 'answer', zoomReward = 'zoom' } = options;
  const { markerIds, answerTokens = 5, epsilon = 1e-6 } = options;
  if (!markerIds || markerIds.length === 0) throw new Error('zoom-zero needs options.markerIds, the span marker ids');
  if (!Number.isInteger(answerTokens) || answerTokens < 0)
    throw new RangeError('zoom-zero: answerTokens must be a non-negative integer');
  const rewards = toRewardArray(input.rewards);
  const count = rewards.length;
  const layout = resolveGroups(count, input.groupSizes);
  const ids = requireSampleField(input.completionIds, 'completionIds', count, 'zoom-zero');
  const [format, iou, answer, zoom] = [formatReward, iouReward, answerReward, zoomReward].map((name) =>
    column(input, name, count),
  );
  const scores = Array.from({ length: count }, (_, i) => {
    const length = ids[i].length;
    const found = markerStart(ids[i], markerIds);
    const spanStart = found >= 0 ? found : length - 1;
    const answerStart = Math.max(0, spanStart - answerTokens);
    return Float64Array.from({ length }, (_, t) => {
      const grounding = t < answerStart || t >= spanStart;
      return (format[i] + zoom[i] + (grounding ? iou[i] : answer[i])) / 3;
    });
  });
  const tokenAdvantages: Float32Array[] = ids.map((row) => new Float32Array(row.length));
  const perSequence = new Float64Array(count);
  const keep = new Uint8Array(count);
  const stdIsZero = new Uint8Array(layout.groupCount);
  for (let g = 0; g < layout.groupCount; g++) {
    const members: number[] = [];
    for (let i = layout.starts[g]; i < layout.starts[g] + layout.sizes[g]; i++)
      if (!Number.isNaN(rewards[i])) members.push(i);
    const tokens = members.flatMap((i) => Array.from(scores[i]));
    let mean = 0;
    let std = 1;
    if (members.length > 1 && tokens.length > 1) {
      mean = tokens.reduce((a, b) => a + b, 0) / tokens.length;
      // torch.std: the sample (N − 1) standard deviation over the group's tokens.
      std = Math.sqrt(tokens.reduce((a, b) => a + (b - mean) ** 2, 0) / (tokens.length - 1));
    }
    stdIsZero[g] = members.length <= 1 || !(std >= zeroStdThreshold) ? 1 : 0;
    for (const i of members) {
      keep[i] = 1;
      tokenAdvantages[i] = Float32Array.from(scores[i], (s) => (s - mean) / (std + epsilon));
      const row = tokenAdvantages[i];
      perSequence[i] = row.length > 0 ? row.reduce((a, b) => a + b, 0) / row.length : 0;
    }
  }
  return { advantages: finishAdvantages(perSequence), tokenAdvantages, keep, stdIsZero };
}

const rewardNameOption = z.string().min(1);

/** `algorithm.advantage: zoom-zero`: the entry `grpo list` prints and configs name. */
export const zoomZeroAdvantagePart = defineAdvantageEstimator({
  name: 'zoom-zero',
  fn: zoomZeroAdvantage,
  description:
    'token-selective credit: score_t = (format + zoom + iou on thinking/span tokens or answer on the answer tokens)/3, z-scored over the group’s tokens',
  citation:
    'Zoom-Zero (#148, arXiv 2512.14273), xiaoqian-shen/Zoom-Zero core_algos.py compute_grpo_select_outcome_advantage',
  needs: ['completionIds', 'rewardComponents'],
  options: z
    .object({
      formatReward: rewardNameOption.describe("the format reward's name (default 'format')"),
      iouReward: rewardNameOption.describe("the temporal IoU reward's name (default 'iou')"),
      answerReward: rewardNameOption.describe("the answer reward's name (default 'answer')"),
      zoomReward: rewardNameOption.nullable().describe("the zoomed-in answer reward's name (default 'zoom'; null: 0)"),
      markerIds: z.array(z.number().int().nonnegative()).min(1).describe('token ids of the span marker; required'),
      answerTokens: z.number().int().nonnegative().describe('answer tokens before the marker (default 5)'),
      epsilon: epsilonOption,
    })
    .partial()
    .strict(),
  refuses: (options, settings) => {
    const problems = Array.isArray(options.markerIds)
      ? []
      : ['algorithm.advantageOptions.markerIds: zoom-zero needs the token ids of the grounding span marker'];
    const names: [string, unknown][] = [
      ['formatReward', options.formatReward ?? 'format'],
      ['iouReward', options.iouReward ?? 'iou'],
      ['answerReward', options.answerReward ?? 'answer'],
      ['zoomReward', options.zoomReward === undefined ? 'zoom' : options.zoomReward],
    ];
    for (const [key, name] of names)
      if (typeof name === 'string' && !settings.rewardNames.includes(name))
        problems.push(
          `algorithm.advantageOptions.${key}: "${name}" is not a reward of this run (rewards: ${settings.rewardNames.join(', ')})`,
        );
    return problems;
  },
});
