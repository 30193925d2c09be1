/**
 * DiffusionNFT on the digits model, from the same start and with the same rewards as
 * recipes/flow-grpo.ts, so their curves sit side by side: no log-probs, the Euler (ODE) sampler for
 * rollouts, the flow-matching loss on final samples with the implicit policies v± (β = 1). Run:
 * `npx grpo train recipes/flow-nft.ts --model runs/<pretrain id>/model --set flow.classifier=runs/<pretrain id>/classifier`
 * (about 2–3 minutes on 2 cores); without `--model` it pre-trains one first. docs/image-models.md.
 */
import type { FlowRecipeConfig } from '../src/index.js';

export default {
  flow: {
    job: 'rl',
    model: null,
    classifier: null,
    rl: {
      algorithm: 'nft',
      sampler: 'ode',
      samplingSteps: 10,
      trainFraction: 0.6, // 6 noise levels drawn per sample
      nftBeta: 1,
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
