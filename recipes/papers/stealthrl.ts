/**
 * StealthRL (#34, Ranganath et al. 2026, arXiv 2602.08934): a paraphrase policy trained with GRPO
 * to rewrite AI-written text so that a detector ensemble stops flagging it while its meaning stays.
 * Run: `npx grpo train recipes/papers/stealthrl.ts`.
 *
 * Task: `paraphrase-evasion` (src/data/tasks/paraphrase-evasion.ts): generated sentences in a
 * "machine" register; the detectors are two logistic regressions trained here on generated machine-
 * and human-register sentences (the paper's RoBERTa and Fast-DetectGPT cannot be had).
 * Reward: `stealthrl`, the paper's R = α·z(1 − p_ens) + β·sim with α = 1, β = 0.1, ensemble weights
 * 0.6/0.4, the running z-score clipped to ±3 and the authors' validity check (−0.5 under 10 words or
 * over 3× the source's), read from the paper and github.com/suraj-ranganath/StealthRL
 * (stealthrl/tinker/reward.py, configs/tinker_mage_10k.yaml). sim is ROUGE-L here, E5 cosine there.
 *
 * Settings that transfer: the reward and its weights, group size 8, temperature 1.0 and top-p 0.9,
 * the KL coefficient 0.05 against the frozen reference. Not here: Qwen3-4B with LoRA (a small
 * from-scratch character model with a short SFT phase on the task's teacher instead), batch 16 ×
 * 3 epochs over 10,000 MAGE texts, the learning rate 2.8e-4 (a LoRA rate).
 * Measured (seed 0, 2 CPU cores, 14 minutes): held-out accuracy 25.0% after SFT, 0.0% after 60 GRPO
 * steps; the reward rose (held-out mean 0.148 → 0.343) by reward hacking: the policy converged on one
 * fixed sentence the detectors score least AI-like, whatever the source says (docs/paper-recipes.md).
 */
import type { Recipe } from '../../src/index.js';

export default {
  config: {
    task: 'paraphrase-evasion',
    taskOptions: { teacherErrorRate: 0.3 },
    model: { hiddenSize: 64, numLayers: 2, numHeads: 4 },
    sft: { steps: 400, batchSize: 16, learningRate: 3e-3, warmupSteps: 20, schedule: 'cosine' },
    sampling: { groupSize: 8, maxNewTokens: 72, temperature: 1, topP: 0.9 },
    algorithm: { advantage: 'grpo', klCoefficient: 0.05, klEstimator: 'k3' },
    grpo: { steps: 60, promptsPerStep: 8, microBatchSize: 64, learningRate: 1e-4 },
    rewards: [{ name: 'stealthrl', weight: 1, options: {} }],
    evaluation: { examples: 40 },
    checkpoint: { every: 1000 },
    logging: { printEvery: 10 },
  },
} satisfies Recipe;
