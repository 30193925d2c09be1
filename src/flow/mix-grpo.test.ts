/** MixGRPO's sliding window: positions by hand, SDE only inside, and a Flow-GRPO step trained on the window only. */
import { describe, expect, it } from 'vitest';
import { flowSigmas } from '../algorithms/flow-steps.js';
import { initFlowModel } from '../model/flow-mlp.js';
import { AdamW } from '../nn/optimizer.js';
import { Random } from '../tensor/random.js';
import { flowGrpoStep } from './flow-grpo.js';
import { slidingWindowAt } from './mix-grpo.js';
import { sampleTrajectory } from './sample.js';

const window = { size: 2, shiftEvery: 3, stride: 1, rollBack: false };

describe('MixGRPO sliding window', () => {
  it('starts at step 0 and moves by the stride every shiftEvery iterations, stopping at the end', () => {
    const starts = [0, 2, 3, 5, 6, 9, 12, 100].map((iteration) => slidingWindowAt(window, 5, iteration, 'sde').trained);
    // iterations 0–2 → [0, 1]; 3–5 → [1, 2]; 6–8 → [2, 3]; 9+ → the last position [3, 4].
    expect(starts).toEqual([
      [0, 1],
      [0, 1],
      [1, 2],
      [1, 2],
      [2, 3],
      [3, 4],
      [3, 4],
      [3, 4],
    ]);
    expect(slidingWindowAt({ ...window, rollBack: true }, 5, 12, 'sde').trained).toEqual([0, 1]); // 4 moves, 4 positions: back to 0
    expect(slidingWindowAt(window, 5, 3, 'cps').steps).toEqual(['ode', 'cps', 'cps', 'ode', 'ode']);
    expect(() => slidingWindowAt({ ...window, size: 6 }, 5, 0, 'sde')).toThrow(
      /window.size 6 is larger than the 5 sampler steps/,
    );
  });

  it('samples with log-probs only inside the window and trains only there', () => {
    const config = {
      modelType: 'flow-mlp' as const,
      imageSize: 2,
      numClasses: 2,
      hiddenSize: 8,
      numBlocks: 1,
      timeFeatures: 4,
    };
    const model = initFlowModel(config, 1);
    const random = new Random(2);
    for (const value of model.parameters.values())
      for (let i = 0; i < value.size; i++) value.data[i] = random.normal() * 0.3;
    const { trained, steps } = slidingWindowAt(window, 5, 3, 'sde');
    const sampler = { sigmas: flowSigmas(5), steps, noiseLevel: 0.7 };
    const trajectory = sampleTrajectory(model, [0, 1], sampler, new Random(3));
    expect(trajectory.logProbs.map((values) => values !== null)).toEqual([false, true, true, false, false]);
    const optimizer = new AdamW(
      [...model.parameters].map(([name, tensor]) => ({ name, tensor, decay: false })),
      { learningRate: 1e-3 },
    );
    const score = (images: Float32Array[]) => ({
      total: Float32Array.from(images, (image) => image[0]),
      components: {},
    });
    const options = {
      groupSize: 2,
      sampler,
      trainFraction: 1,
      clipRange: 0.2,
      advantageClip: 5,
      klCoefficient: 0,
      advantageEstimator: 'grpo',
      innerSteps: 1,
      maxGradNorm: 1,
    };
    const { metrics } = flowGrpoStep(
      { model, reference: null, optimizer, score },
      [0, 1],
      options,
      new Random(4),
      trained,
    );
    expect(Number.isFinite(metrics['loss/total'])).toBe(true);
    // Without the window the first step (an ODE step here) would be trained, which is refused.
    expect(() => flowGrpoStep({ model, reference: null, optimizer, score }, [0, 1], options, new Random(4))).toThrow(
      /no log-prob/,
    );
  });
});
