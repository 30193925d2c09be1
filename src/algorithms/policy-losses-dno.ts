/**
 * DNO: Direct Nash Optimization (Rosset et al., "Direct Nash Optimization: Teaching Language Models
 * to Self-Improve with General Preferences", #222, arXiv 2404.03715), Algorithm 1. Each iteration t
 * scores a response by its expected win-rate against the current policy,
 * r_t(x, y) = E_{y'∼π_t}[P(y ≻ y' | x)], and regresses the new policy's log-ratio to π_t onto those
 * win-rates with a soft-label logistic loss over pairs (y1, y2) of the batch:
 *   max_π E[ σ(r_t(y1) − r_t(y2))·log σ(η·log π(y1)/π_t(y1) − η·log π(y2)/π_t(y2))
 *          + σ(r_t(y2) − r_t(y1))·log σ(η·log π(y2)/π_t(y2) − η·log π(y1)/π_t(y1)) ].
 *
 * Is: the `dno` advantage, which estimates r_t(y_i) from the group itself (the other members are
 * draws of π_t): (1/(n−1))·Σ_{j≠i} P(y_i ≻ y_j) over the n scored members, with P = 1, ½, 0 for a
 * higher, equal, lower reward; or, with `rewardIsWinRate`, the reward itself (a group reward that
 * already is a win-rate under a general, possibly intransitive, judge such as `pairwiseWinRate`).
 * And the `dno` loss: π_t is π_old (the policy that sampled the batch), log π(y) is the sum of the
 * completion's token log-probs, the pairs are every two members of a group, the expectation is the
 * mean over a group's pairs, then over the batch's groups (`globalGroupCount`, so micro-batches add
 * up to the batch). η has no default: Algorithm 1 leaves it to the user.
 * Followed: the paper's Algorithm 1 (no authors' code for it was found); docs/algorithms.md says how it was checked.
 * Is not: DNO-Prct (Algorithm 2: a GPT-4 judge, a gold response in each group, large-margin pair
 * filtering and a DPO loss), nor its uniform mixture of the iterates as the output policy.
 */
import { z } from 'zod';
import { add, log, mul, neg, reshape, sigmoid, sub, sum, tensor } from '../tensor/index.js';
import {
  type AdvantageInput,
  type AdvantageOptions,
  type AdvantageResult,
  defineAdvantageEstimator,
  finishAdvantages,
  resolveGroups,
  scoredMask,
  segmentStats,
  toRewardArray,
  zeroStdFlags,
} from './advantages-groups.js';
import {
  type PolicyLossInput,
  type PolicyLossOptions,
  type PolicyLossResult,
  definePolicyLoss,
  logRatioOf,
  prepareLossInput,
  ratioMetrics,
} from './policy-losses-common.js';
import type { RunSettings } from './registry.js';

/** Options of {@link dnoAdvantage}. */
export interface DnoAdvantageOptions {
  /** The reward already is r_t, each completion's win-rate against its group (default false: computed from reward order). */
  rewardIsWinRate?: boolean;
}

/**
 * DNO's r_t(x, y_i): the share of the group's other scored members whose reward y_i beats, ties
 * counting ½; 0 for a group with one scored member (it has no pair). Unscored samples get 0 and leave
 * the loss. #222, Algorithm 1 line 2, estimated on the group's own draws of π_t.
 */
export function dnoAdvantage(
  input: AdvantageInput,
  options: AdvantageOptions & DnoAdvantageOptions = {},
): AdvantageResult {
  const rewards = toRewardArray(input.rewards);
  const layout = resolveGroups(rewards.length, input.groupSizes);
  const stats = segmentStats(rewards, layout.groupOf, layout.groupCount);
  const winRates = new Float64Array(rewards.length);
  for (let g = 0; g < layout.groupCount; g++) {
    const rows = Array.from({ length: layout.sizes[g] }, (_, k) => layout.starts[g] + k).filter(
      (i) => !Number.isNaN(rewards[i]),
    );
    for (const i of rows) {
      if (options.rewardIsWinRate) winRates[i] = rewards[i];
      else if (rows.length > 1) {
        let wins = 0;
        for (const j of rows) if (j !== i) wins += rewards[i] > rewards[j] ? 1 : rewards[i] === rewards[j] ? 0.5 : 0;
        winRates[i] = wins / (rows.length - 1);
      }
    }
  }
  return { advantages: finishAdvantages(winRates), keep: scoredMask(rewards), stdIsZero: zeroStdFlags(stats) };
}

/** `algorithm.advantage: dno`: the entry `grpo list` prints and configs name. */
export const dnoAdvantagePart = defineAdvantageEstimator({
  name: 'dno',
  fn: dnoAdvantage,
  description:
    "r_t = the completion's win-rate against the rest of its group (ties ½), the target the dno loss regresses on",
  citation: 'DNO (#222, arXiv 2404.03715) Algorithm 1',
  options: z
    .object({ rewardIsWinRate: z.boolean().describe('the reward already is the win-rate r_t (default false)') })
    .partial()
    .strict(),
});

/** Options of {@link dnoLoss}. */
export interface DnoLossOptions {
  /** η of Algorithm 1: the scale of the log-ratios regressed onto the win-rate differences (required, > 0). */
  eta?: number;
}

/**
 * DNO loss: (1/G)·Σ_groups mean_{pairs i<j} −[w·log σ(h) + (1 − w)·log σ(−h)], w = σ(r_i − r_j),
 * h = η·(s_i − s_j), s = Σ_t (logπ_θ − logπ_old), r the `dno` advantages, G = options.globalGroupCount
 * (default: this call's groups that have a pair). dLoss/dh = σ(h) − w per pair. No KL term: the
 * regression to π_old is the update's only anchor. Needs whole groups. #222 Algorithm 1 line 3.
 */
export function dnoLoss(input: PolicyLossInput, options: PolicyLossOptions & DnoLossOptions = {}): PolicyLossResult {
  for (const field of ['klCoefficient', 'mismatchCorrection', 'topEntropyQuantile'] as const)
    if (options[field] !== undefined && options[field] !== 0)
      throw new Error(`The dno loss does not support options.${field}.`);
  if (input.groupSizes === undefined) throw new Error('The dno loss needs input.groupSizes (whole groups per batch).');
  const eta = options.eta;
  if (eta === undefined || !Number.isFinite(eta) || eta <= 0)
    throw new RangeError(`options.eta (DNO's η) must be a number > 0, got ${eta}.`);
  const prepared = prepareLossInput(input);
  const { B, T, mask } = prepared;
  const layout = resolveGroups(B, input.groupSizes);
  const logRatio = logRatioOf(prepared);
  const sequenceLogRatio = sum(logRatio, 1); // [B]: prepareLossInput zeroed the padded positions of both
  const tokens = new Float32Array(B);
  for (let i = 0; i < B * T; i++) tokens[Math.floor(i / T)] += mask[i];
  const winRate = (b: number) => {
    let t = 0;
    while (t < T - 1 && !mask[b * T + t]) t++;
    return prepared.advantages.data[b * T + t];
  };
  const pairs: { i: number; j: number; target: number; weight: number }[] = [];
  let groupsWithPairs = 0;
  for (let g = 0; g < layout.groupCount; g++) {
    const rows = Array.from({ length: layout.sizes[g] }, (_, k) => layout.starts[g] + k).filter((b) => tokens[b] > 0);
    const count = (rows.length * (rows.length - 1)) / 2;
    if (count > 0) groupsWithPairs++;
    rows.forEach((i, a) =>
      rows.slice(a + 1).forEach((j) => {
        const target = 1 / (1 + Math.exp(-(winRate(i) - winRate(j))));
        pairs.push({ i, j, target, weight: 1 / count });
      }),
    );
  }
  const groups = options.globalGroupCount ?? groupsWithPairs;
  if (pairs.length > 0 && !(groups > 0)) throw new RangeError(`options.globalGroupCount must be > 0, got ${groups}.`);
  let loss = mul(sum(sequenceLogRatio), 0); // no pair: a zero loss that still reaches logprobs
  if (pairs.length > 0) {
    const P = pairs.length;
    // h [P] = η·(s_i − s_j): a [P, B] selection of ±η times s broadcast over the pairs, summed per pair.
    const selection = new Float32Array(P * B);
    pairs.forEach(({ i, j }, p) => {
      selection[p * B + i] = eta;
      selection[p * B + j] = -eta;
    });
    const h = sum(mul(tensor(selection, [P, B]), reshape(sequenceLogRatio, [1, B])), 1);
    const targets = tensor(
      Float32Array.from(pairs, (p) => p.target),
      [P],
    );
    const weights = tensor(
      Float32Array.from(pairs, (p) => p.weight),
      [P],
    );
    // Per pair −[w·log σ(h) + (1 − w)·log σ(−h)], weighted by 1/(the group's pairs), summed, over G groups.
    const likelihood = add(mul(targets, log(sigmoid(h))), mul(sub(1, targets), log(sigmoid(neg(h)))));
    loss = mul(sum(mul(likelihood, weights)), -1 / groups);
  }
  return {
    loss,
    metrics: { ...ratioMetrics(logRatio.data, mask), policyLoss: loss.item(), dnoPairs: pairs.length },
  };
}

/** The run settings DNO cannot work with: it regresses on the dno advantage's win-rates and has no KL to a reference. */
function refusesDno(options: Record<string, unknown>, settings: RunSettings): string[] {
  return [
    ...(options.eta === undefined
      ? ['algorithm.lossOptions.eta: the dno loss needs η, the scale of its log-ratios (Algorithm 1 sets none), e.g. 1']
      : []),
    ...(settings.advantage.name !== 'dno'
      ? [
          `algorithm.advantage: the dno loss reads each completion's win-rate r_t as its advantage; use algorithm.advantage "dno", got "${settings.advantage.name}"`,
        ]
      : []),
    ...(settings.klCoefficient > 0 && settings.klPlacement === 'loss'
      ? [
          'algorithm.klCoefficient: the dno loss adds no KL-to-reference term (its anchor is π_old); use klCoefficient 0',
        ]
      : []),
    ...(settings.mismatchCorrection
      ? ['algorithm.mismatchCorrection: the dno loss has no per-token weights to correct; set it to null']
      : []),
  ];
}

/** `algorithm.loss: dno`: the entry `grpo list` prints and configs name. */
export const dnoLossPart = definePolicyLoss({
  name: 'dno',
  fn: dnoLoss,
  description:
    'pairs of a group: −[w·log σ(h) + (1−w)·log σ(−h)], w = σ(r_i − r_j) of the dno win-rates, h = η·(s_i − s_j), s = Σ log π/π_old; whole groups',
  citation: 'DNO (#222, arXiv 2404.03715) Algorithm 1',
  needs: ['wholeGroups'],
  options: z
    .object({ eta: z.number().positive().describe("η of Algorithm 1, the log-ratios' scale (required)") })
    .partial()
    .strict(),
  refuses: refusesDno,
});
