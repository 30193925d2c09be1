/**
 * Pre-trains the small class-conditional rectified-flow model on the MNIST digits (14×14) by flow
 * matching, and the digit classifier that the `confidence` reward uses. Run:
 * `npx grpo train recipes/flow-pretrain.ts` (about 12–16 minutes on 2 cores); it writes
 * `runs/<id>/model/` (config.json, model.safetensors, samples.png), `runs/<id>/classifier/` and
 * `metrics.jsonl` (`loss/flowMatching`). Start the RL recipes from it with
 * `--model runs/<id>/model --set flow.classifier=runs/<id>/classifier`. docs/image-models.md.
 */
import type { FlowRecipeConfig } from '../src/index.js';

export default {
  flow: {
    job: 'pretrain',
    // The defaults of `grpo flow pretrain`: 1500 steps × 64 digits, hidden 256, 3 adaLN blocks (1.7M parameters).
    pretrain: { steps: 1500, batchSize: 64, learningRate: 2e-3, hiddenSize: 256, numBlocks: 3, imageSize: 14, seed: 1 },
    classifierTraining: { epochs: 5, seed: 1 },
  },
} satisfies FlowRecipeConfig;
