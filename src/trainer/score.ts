/**
 * From rollout samples to per-sample training signal: reward inputs, the reward matrix, the combined
 * reward, group advantages from the configured estimator, and which samples stay in the loss
 * (invalid rewards, group filters, truncated completions).
 *
 * Is not: the optimiser step (optimize.ts) or the rollout (rollout.ts).
 */
import { advantageEstimators, groupFilters } from '../algorithms/index.js';
import { rewardMetrics, scoreRewards, weightedSum, weightsAt, type RewardMatrix } from '../rewards/index.js';
import type { NamedReward, RewardInput } from '../rewards/types.js';
import type { TrainerConfig } from './config.js';
import type { RolloutPrompt, RolloutSample } from './rollout.js';

export interface ScoredBatch {
  prompts: RolloutPrompt[];
  samples: RolloutSample[];
  matrix: RewardMatrix;
  rewards: Float64Array;
  advantages: Float32Array;
  /** Per-token advantages when the estimator is token-level (e.g. tree), one array per sample. */
  tokenAdvantages?: Float32Array[];
  /** 1 = the sample carries gradient. */
  keep: Uint8Array;
  /** 1 per group whose group filter kept it. */
  keepGroups: Uint8Array;
  zeroStdGroups: number;
  invalidSamples: number;
}

export async function scoreSamples(
  config: TrainerConfig,
  rewards: readonly NamedReward[],
  prompts: RolloutPrompt[],
  samples: RolloutSample[],
  step: number,
): Promise<ScoredBatch> {
  const G = config.sampling.groupSize;
  const groups: RewardInput[][] = prompts.map((prompt, promptIndex) => {
    const members = samples.slice(promptIndex * G, (promptIndex + 1) * G);
    const texts = members.map((sample) => sample.text);
    return members.map((sample, indexInGroup) => ({
      prompt: prompt.example.prompt, completion: sample.text, completionIds: sample.completionIds, row: prompt.example,
      group: texts, indexInGroup, step, truncated: sample.truncated,
    }));
  });
  const matrix = await scoreRewards(rewards, groups);
  const weights = weightsAt(rewards, step);
  const combined = weightedSum(matrix, weights);
  const width = rewards.length;
  const components = rewards.map((_, column) => Array.from({ length: matrix.sampleCount }, (_, sample) => {
    const value = matrix.scores[sample * width + column];
    return Number.isFinite(value) ? value : null;
  }));
  // Invalid samples (a reward threw or timed out) are NaN in the sum and `null` to the estimators.
  const scoredRewards = Array.from(combined.rewards, (value) => (Number.isFinite(value) ? value : null));
  const advantageResult = advantageEstimators.get(config.algorithm.advantage)(
    {
      rewards: scoredRewards,
      groupSizes: G,
      rewardComponents: components,
      rewardWeights: weights,
      completionIds: samples.map((sample) => sample.completionIds),
    },
    config.algorithm.advantageOptions,
  );
  const keep = Uint8Array.from(advantageResult.keep);
  let keepGroups: Uint8Array = new Uint8Array(prompts.length).fill(1);
  if (config.algorithm.groupFilter) {
    const filtered = groupFilters.get(config.algorithm.groupFilter)({
      rewards: scoredRewards,
      groupSizes: G,
      truncated: samples.map((sample) => sample.truncated),
    });
    keepGroups = filtered.keepGroups;
    filtered.keepSamples.forEach((kept, i) => { if (!kept) keep[i] = 0; });
  }
  if (config.algorithm.maskTruncated) samples.forEach((sample, i) => { if (sample.truncated) keep[i] = 0; });
  combined.valid.forEach((valid, i) => { if (!valid) keep[i] = 0; });
  return {
    prompts, samples, matrix, rewards: combined.rewards, advantages: advantageResult.advantages, tokenAdvantages: advantageResult.tokenAdvantages, keep, keepGroups,
    zeroStdGroups: advantageResult.stdIsZero.reduce((a, b) => a + b, 0),
    invalidSamples: combined.invalidCount,
  };
}

/** One prompt's group after scoring, the unit dynamic sampling keeps, drops and refills. */
export interface ScoredGroup {
  prompt: RolloutPrompt;
  samples: RolloutSample[];
  rewards: number[];
  advantages: number[];
  tokenAdvantages?: Float32Array[];
  keep: number[];
  /** Per-reward scores per sample (null = not applicable or failed), for samples.jsonl. */
  scores: Record<string, number | null>[];
}

/** The groups a batch's filter kept, each with its samples' signal. */
export function keptGroups(batch: ScoredBatch, groupSize: number): ScoredGroup[] {
  const width = batch.matrix.names.length;
  return batch.prompts.flatMap((prompt, g) => {
    if (!batch.keepGroups[g]) return [];
    const indices = Array.from({ length: groupSize }, (_, i) => g * groupSize + i);
    return [{
      prompt,
      samples: indices.map((i) => batch.samples[i]),
      rewards: indices.map((i) => batch.rewards[i]),
      advantages: indices.map((i) => batch.advantages[i]),
      tokenAdvantages: batch.tokenAdvantages && indices.map((i) => batch.tokenAdvantages![i]),
      keep: indices.map((i) => batch.keep[i]),
      scores: indices.map((i) => Object.fromEntries(batch.matrix.names.map((name, column) => {
        const value = batch.matrix.scores[i * width + column];
        return [name, Number.isFinite(value) ? value : null];
      }))),
    }];
  });
}

/** Reward metrics of a batch with the stable names of docs/run-folder.md. */
export function rewardLogMetrics(batch: ScoredBatch, groupCount: number): Record<string, number> {
  const finite = Array.from(batch.rewards).filter(Number.isFinite);
  const mean = finite.reduce((a, b) => a + b, 0) / Math.max(1, finite.length);
  const variance = finite.reduce((a, b) => a + (b - mean) ** 2, 0) / Math.max(1, finite.length);
  const metrics: Record<string, number> = {
    'reward/mean': mean,
    'reward/std': Math.sqrt(variance),
    'reward/fracZeroStd': batch.zeroStdGroups / Math.max(1, groupCount),
    'reward/invalidSamples': batch.invalidSamples,
  };
  for (const [name, value] of Object.entries(rewardMetrics(batch.matrix))) {
    if (name.endsWith('/mean') || name.endsWith('/std')) metrics[name] = value;
    else if (name.endsWith('/failures')) metrics[name.replace('/failures', '/invalid')] = value;
  }
  return metrics;
}
