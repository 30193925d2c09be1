/**
 * LOOP's recipe (#226, recipes/papers/loop.ts) end to end through `grpo train` at a tiny size: SFT,
 * then two GRPO steps of multi-turn calculator episodes with the leave-one-out advantage and two
 * passes per batch. Its clip is the authors' [1/(1 + ε), 1 + ε] (apple/ml-loop `_ppo_loss`), not
 * PPO's symmetric [1 − ε, 1 + ε]: checked on single tokens against that code's objective,
 * min(ρA, g(A)) with g(A) = (1 + ε)·A for A ≥ 0 and A/(1 + ε) otherwise.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ppoClipLoss } from '../algorithms/policy-losses.js';
import { type Tensor, tensor } from '../tensor/index.js';
import { grpoStepRecords, inProcessCli, tinyRunFlags } from '../../test/helpers/cli-in-process.js';

const root = new URL('../../', import.meta.url).pathname;
const recipe = join(root, 'recipes/papers/loop.ts');
const { runs, grpo } = inProcessCli('grpo-loop-');

/** The authors' per-token objective (`_ppo_loss`), negated as a loss. */
function authorsLoss(ratio: number, advantage: number, epsilon: number): number {
  const bound = advantage >= 0 ? (1 + epsilon) * advantage : advantage / (1 + epsilon);
  return -Math.min(ratio * advantage, bound);
}

describe('recipes/papers/loop.ts', () => {
  it("clips the ratio to [1/(1 + ε), 1 + ε] with ε = 0.1, as the authors' _ppo_loss", async () => {
    const { default: loaded } = await import(recipe);
    const { lossOptions } = loaded.config.algorithm;
    // 0.905 lies inside PPO's symmetric [0.9, 1.1] but below 1/1.1 = 0.90909: only LOOP's clip binds there.
    for (const [ratio, advantage] of [
      [0.905, -1],
      [0.95, -1],
      [1.2, 1],
      [1.05, 0.5],
      [0.8, 2],
    ]) {
      const logprobs = tensor([Math.log(ratio) - 1], [1, 1], { requiresGrad: true });
      const result = ppoClipLoss({ logprobs, oldLogprobs: [-1], advantages: [advantage], mask: [1] }, lossOptions);
      result.loss.backward();
      expect(result.loss.item()).toBeCloseTo(authorsLoss(ratio, advantage, 0.1), 6);
      const clipped = advantage < 0 ? ratio < 1 / 1.1 : ratio > 1.1;
      expect((logprobs.grad as Tensor).data[0] === 0).toBe(clipped);
    }
  });

  it('runs SFT and two GRPO steps of calculator episodes with rloo, two passes, no KL', async () => {
    // groupSize stays the recipe's 6 (K in the paper); 2 prompts × 6 = 12 completions per step.
    await grpo(
      'train',
      recipe,
      '--run-name',
      'loop',
      ...tinyRunFlags(runs, { 'sampling.groupSize': undefined, 'grpo.microBatchSize': 12 }),
    );
    const steps = grpoStepRecords(runs, 'loop');
    expect(steps).toHaveLength(2);
    for (const step of steps) expect(Number.isFinite(step['loss/policy'])).toBe(true);
    const config = JSON.parse(readFileSync(join(runs, 'loop', 'config.json'), 'utf8'));
    expect(config.sampling.groupSize).toBe(6);
    expect(config.grpo.iterations).toBe(2);
    expect(config.algorithm).toMatchObject({
      advantage: 'rloo',
      loss: 'ppo-clip',
      aggregation: 'seq-mean-token-mean',
      klCoefficient: 0,
    });
    expect(config.optimizer).toMatchObject({ beta2: 0.999, weightDecay: 0.01, maxGradNorm: 0.1 });
    expect(config.agent.maxTurns).toBe(2);
  });
});
