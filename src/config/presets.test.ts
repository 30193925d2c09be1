/**
 * Each preset's loss pipeline, as the trainer builds it from the config (registry lookups in
 * score.ts and optimize.ts), equals the composition of the algorithm functions the preset names,
 * called directly — on a fixed batch, for the advantages, the loss value and its gradient. So the
 * loop has no hidden special cases per recipe.
 */
import { describe, expect, it } from 'vitest';
import {
  advantageEstimators,
  cispoLoss,
  drGrpoAdvantage,
  grpoAdvantage,
  gspoLoss,
  klK3,
  ppoClipLoss,
  rlooAdvantage,
  seqMeanTokenMeanWeights,
  seqMeanTokenSumNormWeights,
  tokenMeanWeights,
  type AdvantageFn,
  type PolicyLossFn,
  type PolicyLossOptions,
} from '../algorithms/index.js';
import { tensor } from '../tensor/index.js';
import { lossOptionsFor } from '../trainer/optimize.js';
import { bindAlgorithm } from './algorithm.js';
import { presetNames } from './presets.js';
import { resolveConfig } from '../trainer/setup.js';

const expected: Record<
  string,
  { advantage: AdvantageFn; loss: PolicyLossFn; options: PolicyLossOptions; filter: string | null }
> = {
  grpo: {
    advantage: grpoAdvantage,
    loss: ppoClipLoss,
    options: {
      epsilonLow: 0.2,
      epsilonHigh: 0.2,
      aggregation: seqMeanTokenMeanWeights,
      klCoefficient: 0.04,
      klEstimator: klK3,
    },
    filter: null,
  },
  'dr-grpo': {
    advantage: drGrpoAdvantage,
    loss: ppoClipLoss,
    options: { epsilonLow: 0.2, epsilonHigh: 0.2, aggregation: seqMeanTokenSumNormWeights },
    filter: null,
  },
  dapo: {
    advantage: grpoAdvantage,
    loss: ppoClipLoss,
    options: { epsilonLow: 0.2, epsilonHigh: 0.28, aggregation: tokenMeanWeights },
    filter: 'dynamic-sampling',
  },
  gspo: {
    advantage: grpoAdvantage,
    loss: gspoLoss,
    options: { epsilonLow: 3e-4, epsilonHigh: 4e-4, aggregation: seqMeanTokenMeanWeights },
    filter: null,
  },
  cispo: {
    advantage: grpoAdvantage,
    loss: cispoLoss,
    options: { capMode: 'relative', epsilonHigh: 0.28, aggregation: tokenMeanWeights },
    filter: null,
  },
  rloo: {
    advantage: rlooAdvantage,
    loss: ppoClipLoss,
    options: { epsilonLow: 0.2, epsilonHigh: 0.2, aggregation: tokenMeanWeights },
    filter: null,
  },
};

// A fixed batch: 2 groups of 3 completions, 4 token positions, ragged lengths, ratios inside and
// outside every preset's clip range.
const rewards = [1, 0, 0.5, 0, 0, 1];
const B = 6;
const T = 4;
const mask = Float32Array.from([1, 1, 1, 0, 1, 1, 1, 1, 1, 0, 0, 0, 1, 1, 1, 1, 1, 1, 0, 0, 1, 1, 1, 1]);
const logprobValues = Array.from({ length: B * T }, (_, i) => -0.5 - 0.1 * Math.sin(i));
const oldLogprobs = Float32Array.from(logprobValues, (value, i) => value + 0.3 * Math.cos(3 * i));
const refLogprobs = Float32Array.from(logprobValues, (value, i) => value - 0.05 * Math.sin(2 * i));

function run(loss: PolicyLossFn, advantages: Float32Array, options: PolicyLossOptions) {
  const logprobs = tensor(logprobValues, [B, T], { requiresGrad: true });
  const result = loss(
    { logprobs, oldLogprobs, advantages, mask, refLogprobs },
    { ...options, maxLength: T, globalTokenCount: mask.reduce((a, b) => a + b, 0), globalSequenceCount: B },
  );
  result.loss.backward();
  return { value: result.loss.item(), gradient: Array.from(logprobs.grad!.data) };
}

describe('presets are compositions of the named functions', () => {
  it('every preset has an expected composition here', () => {
    expect(Object.keys(expected).sort()).toEqual(presetNames().sort());
  });
  it.each(Object.keys(expected))('%s', (name) => {
    const config = resolveConfig({ preset: name, sampling: { maxNewTokens: T } });
    const want = expected[name];
    expect(config.algorithm.groupFilter).toBe(want.filter);
    const viaConfig = advantageEstimators.get(config.algorithm.advantage)(
      { rewards, groupSizes: 3 },
      config.algorithm.advantageOptions,
    ).advantages;
    const direct = want.advantage({ rewards, groupSizes: 3 }).advantages;
    expect(Array.from(viaConfig)).toEqual(Array.from(direct));
    const bound = bindAlgorithm(config, { sampleRows: [], rolloutProvides: [], rewardNames: [] });
    const trainerPath = run(bound.loss.fn, viaConfig, lossOptionsFor(bound, { maxNewTokens: T }));
    const composed = run(want.loss, direct, want.options);
    expect(trainerPath.value).toBe(composed.value);
    expect(trainerPath.gradient).toEqual(composed.gradient);
    expect(trainerPath.gradient.some((g) => g !== 0)).toBe(true);
  });
});
