/**
 * Flow-GRPO on the digits model: make each class's digits more confident (the classifier's
 * probability of the asked-for class) and bolder (stroke thickness). Run from a pre-trained model:
 * `npx grpo train recipes/flow-grpo.ts --model runs/<pretrain id>/model --set flow.classifier=runs/<pretrain id>/classifier`
 * (about 2 minutes on 2 cores); without `--model` it pre-trains one first (the settings of
 * recipes/flow-pretrain.ts, about 12–16 minutes) and trains its own classifier (seconds).
 * Writes metrics.jsonl (`reward/mean`, `eval/reward/mean`, …), samples-step-N.png grids (before,
 * every 20 steps, after) and model/. docs/image-models.md.
 */
import type { FlowRecipeConfig } from '../src/index.js';

export default {
  flow: {
    job: 'rl',
    model: null, // null: pre-train first (flow.pretrain); or a folder from recipes/flow-pretrain.ts
    classifier: null, // null: train one first; or runs/<pretrain id>/classifier
    rl: {
      algorithm: 'flow-grpo',
      sampler: 'sde', // Flow-GRPO's SDE step, noise level a = 0.7
      noiseLevel: 0.7,
      samplingSteps: 10,
      trainFraction: 0.6, // the first 6 of 10 steps are trained
      clipRange: 1e-4,
      advantageClip: 5,
      klCoefficient: 0,
      steps: 60,
      promptsPerStep: 4,
      groupSize: 8,
      learningRate: 5e-4,
      rewards: { confidence: 1, thickness: 1 },
      evalEvery: 20,
      evalPerClass: 8,
    },
  },
} satisfies FlowRecipeConfig;
