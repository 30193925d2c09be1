/**
 * RLPrompt (#105, Deng et al. 2022, arXiv 2205.12548): a policy writes discrete prompts, rewarded by
 * how well a frozen task model classifies with them, with the paper's reward stabilisation. Run:
 * `npx grpo train recipes/papers/rlprompt.ts`.
 *
 * Task: `prompt-classification` (src/data/tasks/prompt-classification.ts): each row is a batch of
 * labelled sentences and a frozen bag-of-words language model made here (RLPrompt's RoBERTa/GPT-2
 * cannot be had); the policy's completion is the prompt, read as `{sentence} {prompt}`.
 * Reward: `rlprompt-classification`, the authors' piecewise gap (p(label) − the largest other
 * verbalizer probability, ×200 when positive, ×180 when not; github.com/mingkaid/rl-prompt,
 * fsc_reward.py), averaged over the row's sentences and z-scored among the prompts written for the
 * same row (their `compute_zscore`). Held-out accuracy: the prompt classifies every sentence of a row.
 *
 * Settings that transfer: the reward, its coefficients and its per-input z-score; prompts of a few
 * words. Not here: their soft Q-learning (GRPO takes its place) and its reward shaping, the 5-token
 * prompts over GPT-2's vocabulary (here whole words from a small set), the real data sets.
 * Measured: not yet learning. Four full runs ended at their starting held-out accuracy, and two of
 * them collapsed into words the frozen model ignores (docs/paper-recipes.md, "RLPrompt").
 */
import type { Recipe } from '../../src/index.js';

export default {
  config: {
    task: 'prompt-classification',
    taskOptions: { sentences: 4, promptWords: 3 },
    model: { hiddenSize: 64, numLayers: 2, numHeads: 4 },
    sft: { steps: 200, batchSize: 16, learningRate: 3e-3, warmupSteps: 20, schedule: 'cosine' },
    sampling: { groupSize: 8, maxNewTokens: 32, temperature: 1 },
    grpo: { steps: 60, promptsPerStep: 8, microBatchSize: 64, learningRate: 1e-4 },
    rewards: [{ name: 'rlprompt-classification', weight: 1, options: {} }],
    evaluation: { examples: 40 },
    checkpoint: { every: 1000 },
    logging: { printEvery: 10 },
  },
} satisfies Recipe;
