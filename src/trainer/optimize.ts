/**
 * One optimiser step over a batch of completions: micro-batches with gradient accumulation and the
 * correct global token/sequence counts, the configured policy loss + aggregation + KL composed by
 * name, gradient clipping, the non-finite guard, and AdamW. Also the SFT cross-entropy step.
 *
 * Is not: scoring or logging. Returns metrics averaged over micro-batches (weighted by tokens).
 */
import { klEstimators, lossAggregations, policyLosses, type PolicyLossOptions } from '../algorithms/index.js';
import type { Transformer } from '../model/transformer.js';
import { AdamW, clipGradNorm } from '../nn/index.js';
import { mul, noGrad, sum, tensor, type Tensor } from '../tensor/index.js';
import type { TrainerConfig } from './config.js';
import { completionLogprobs, padRows, type TokenSequence } from './sequences.js';

export interface TrainingSample extends TokenSequence {
  oldLogprobs: readonly number[];
  advantage: number;
  /** Per-token advantages from a token-level estimator; overrides `advantage` when present. */
  tokenAdvantages?: ArrayLike<number>;
  /** log π_ref of each completion token, when the loss has a KL term (see withReferenceLogprobs). */
  refLogprobs?: ArrayLike<number>;
}

/**
 * The reference model's logprobs of every completion token, computed once per batch (μ passes
 * reuse them: the reference never changes), in the same micro-batches as training.
 */
export function withReferenceLogprobs(config: TrainerConfig, referenceModel: Transformer, samples: readonly TrainingSample[]): TrainingSample[] {
  const result: TrainingSample[] = [];
  for (let start = 0; start < samples.length; start += config.grpo.microBatchSize) {
    const micro = samples.slice(start, start + config.grpo.microBatchSize);
    const { logprobs, Tc } = noGrad(() => completionLogprobs(referenceModel, micro, config.sampling.temperature));
    micro.forEach((sample, b) => result.push({ ...sample, refLogprobs: logprobs.data.slice(b * Tc, b * Tc + sample.completionIds.length) }));
  }
  return result;
}

export interface StepOutcome {
  metrics: Record<string, number>;
  /** False when the loss or gradient was not finite and the update was skipped. */
  applied: boolean;
}

/** The loss options a config names, resolved to functions (shared by the loop and presets.test.ts). */
export function lossOptionsFor(config: TrainerConfig): PolicyLossOptions {
  return {
    ...(config.algorithm.lossOptions as PolicyLossOptions),
    aggregation: lossAggregations.get(config.algorithm.aggregation),
    klCoefficient: config.algorithm.klCoefficient,
    klEstimator: klEstimators.get(config.algorithm.klEstimator),
    maxLength: config.sampling.maxNewTokens,
  };
}

/** Parameters as AdamW wants them: matrices decay, norms and biases do not. */
export function optimizedParameters(model: Transformer) {
  return [...model.parameters].map(([name, tensor]) => ({ name, tensor, decay: tensor.rank >= 2 && !name.endsWith('norm.weight') }));
}

function applyUpdate(model: Transformer, optimizer: AdamW, maxGradNorm: number, lossValue: number): { gradNorm: number; applied: boolean } {
  const parameters = [...model.parameters.values()];
  const gradNorm = maxGradNorm > 0 ? clipGradNorm(parameters, maxGradNorm) : clipGradNorm(parameters, Infinity);
  const applied = Number.isFinite(gradNorm) && Number.isFinite(lossValue);
  if (applied) optimizer.step();
  optimizer.zeroGrad();
  return { gradNorm, applied };
}

/** One policy-gradient update over `samples` (already filtered to those that carry gradient). */
export function policyStep(
  config: TrainerConfig,
  model: Transformer,
  optimizer: AdamW,
  samples: readonly TrainingSample[],
): StepOutcome {
  const options = lossOptionsFor(config);
  const loss = policyLosses.get(config.algorithm.loss);
  const microBatchSize = config.grpo.microBatchSize;
  const globalTokenCount = samples.reduce((total, s) => total + (s.lossMask ?? s.completionIds).reduce((a: number, b) => a + (b ? 1 : 0), 0), 0);
  const accumulator = new MetricAccumulator();
  let lossTotal = 0;
  optimizer.zeroGrad();
  for (let start = 0; start < samples.length; start += microBatchSize) {
    const micro = samples.slice(start, start + microBatchSize);
    const { logprobs, mask, entropies, Tc } = completionLogprobs(model, micro, config.sampling.temperature);
    const refLogprobs = micro.some((s) => s.refLogprobs) ? padRows(micro.map((s) => Array.from(s.refLogprobs ?? [])), Tc) : undefined;
    const result = loss(
      {
        logprobs,
        oldLogprobs: padRows(micro.map((s) => [...s.oldLogprobs]), Tc),
        advantages: micro.some((s) => s.tokenAdvantages)
          ? padRows(micro.map((s) => (s.tokenAdvantages ? Array.from(s.tokenAdvantages) : s.completionIds.map(() => s.advantage))), Tc)
          : Float32Array.from(micro, (s) => s.advantage),
        mask,
        refLogprobs,
        entropies,
      },
      { ...options, globalTokenCount, globalSequenceCount: samples.length },
    );
    result.loss.backward();
    lossTotal += result.loss.item();
    accumulator.add(result.metrics, mask.reduce((a, b) => a + b, 0));
  }
  const { gradNorm, applied } = applyUpdate(model, optimizer, config.optimizer.maxGradNorm, lossTotal);
  const metrics: Record<string, number> = { ...accumulator.result(), 'loss/total': lossTotal, gradNorm };
  return { metrics, applied };
}

// Loss metric names → the stable names of docs/run-folder.md, and how micro-batches combine them:
// the policy loss is already a share of the global mean (sum), extremes take min/max, the rest
// are token-weighted means.
const METRIC_NAMES: Record<string, [string, 'sum' | 'min' | 'max' | 'mean']> = {
  policyLoss: ['loss/policy', 'sum'],
  kl: ['loss/kl', 'mean'],
  clipFractionLow: ['clip/low', 'mean'],
  clipFractionHigh: ['clip/high', 'mean'],
  clipFraction: ['clip/region', 'mean'],
  ratioMean: ['ratio/mean', 'mean'],
  ratioMin: ['ratio/min', 'min'],
  ratioMax: ['ratio/max', 'max'],
  approxKl: ['kl/approx', 'mean'],
  entropy: ['entropy', 'mean'],
};

class MetricAccumulator {
  private readonly values = new Map<string, { mode: 'sum' | 'min' | 'max' | 'mean'; total: number; weight: number }>();

  add(metrics: Record<string, number>, tokens: number): void {
    for (const [rawName, value] of Object.entries(metrics)) {
      const [name, mode] = METRIC_NAMES[rawName] ?? [`loss/${rawName}`, 'mean'];
      const entry = this.values.get(name) ?? { mode, total: mode === 'min' ? Infinity : mode === 'max' ? -Infinity : 0, weight: 0 };
      if (mode === 'sum') entry.total += value;
      else if (mode === 'min') entry.total = Math.min(entry.total, value);
      else if (mode === 'max') entry.total = Math.max(entry.total, value);
      else entry.total += value * tokens;
      entry.weight += tokens;
      this.values.set(name, entry);
    }
  }

  result(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const [name, { mode, total, weight }] of this.values) out[name] = mode === 'mean' ? total / Math.max(1, weight) : total;
    return out;
  }
}

/** Mean next-token cross-entropy over completion tokens only, one optimiser step. */
export function sftStep(config: TrainerConfig, model: Transformer, optimizer: AdamW, sequences: readonly TokenSequence[]): StepOutcome {
  optimizer.zeroGrad();
  const { logprobs, mask } = completionLogprobs(model, sequences, 1, { packLength: config.sft.packLength });
  const count = mask.reduce((a, b) => a + b, 0);
  const lossTensor: Tensor = mul(sum(mul(logprobs, tensor(mask, logprobs.shape))), -1 / Math.max(1, count));
  lossTensor.backward();
  const lossValue = lossTensor.item();
  const { gradNorm, applied } = applyUpdate(model, optimizer, config.optimizer.maxGradNorm, lossValue);
  return { metrics: { 'loss/sft': lossValue, gradNorm }, applied };
}
