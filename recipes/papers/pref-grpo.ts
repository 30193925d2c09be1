/**
 * Pref-GRPO (Wang et al. 2025, arXiv 2508.20751, papers #5) on the digits flow model: Flow-GRPO whose
 * reward is each image's pairwise win rate within its group (image reward `win-rate`), so a tiny score
 * gap between two images gives one rank step, not a large advantage gap. Run:
 * `npx grpo train recipes/papers/pref-grpo.ts` (pre-trains a start and a classifier first, as
 * recipes/flow-grpo.ts does; add `--model DIR --set flow.classifier=DIR` to start from a pre-trained run).
 *
 * From the authors' CodeGoat24/Pref-GRPO (fastvideo/train_flux_pref_grpo.py, scripts/_common_finetune.sh,
 * finetune_prefgrpo_flux.sh): the Flow-GRPO SDE step with η = 0.7, G = 8 images per prompt, the win rate
 * as the only reward and its group z-score as the advantage, timestep fraction 0.6, clip range 1e-4,
 * advantage clip 5, no KL. Differs: the judge is the digit classifier (which image is more likely its
 * asked digit), not the UnifiedReward-Think VLM; 10 sampling steps, not 25; each image starts from its
 * own noise (the code's --init_same_noise shares one per batch); no --rationorm (an option of their later
 * train_flux.py, not of the Pref-GRPO script); the z-score's ε is the estimator's 1e-6, theirs 1e-8.
 */
import type { FlowRecipeConfig } from '../../src/index.js';

export default {
  flow: {
    job: 'rl',
    model: null, // null: pre-train first (flow.pretrain); or a folder from recipes/flow-pretrain.ts
    classifier: null, // null: train one first (the win-rate judge); or runs/<pretrain id>/classifier
    rl: {
      algorithm: 'flow-grpo',
      sampler: 'sde',
      noiseLevel: 0.7, // the code's --eta 0.7
      samplingSteps: 10,
      trainFraction: 0.6,
      clipRange: 1e-4,
      advantageClip: 5,
      klCoefficient: 0,
      steps: 60,
      promptsPerStep: 4,
      groupSize: 8, // --num_generations 8: the win rate compares each image with the other 7
      learningRate: 5e-4,
      // A group's win rates always average ½, so eval/reward/mean stays 0.5: the judge's own score,
      // weight 0 (logged, not trained on), shows whether the images got better.
      rewards: { 'win-rate': 1, confidence: 0 },
      evalEvery: 20,
      evalPerClass: 8,
    },
  },
} satisfies FlowRecipeConfig;
