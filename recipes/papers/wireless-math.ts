/**
 * WirelessMathLM (#221, Li et al. 2025, arXiv 2509.23219): GRPO with a binary verification reward on
 * wireless-communication mathematics in the WirelessMathBench-XL format. Run:
 * `npx grpo train recipes/papers/wireless-math.ts`.
 *
 * Task: `wireless-math` (src/data/tasks/wireless-math.ts) generates the benchmark's three kinds of
 * question about textbook formulas (Shannon rate, SNR, SINR, Friis, Rayleigh outage, energy
 * efficiency, array gain, path loss): multiple choice (`\boxed{C}`), fill-in-the-blank with one or
 * two `[MASK]` terms (one `\boxed{…}` per blank) and full equation completion.
 * Reward: `wireless-math`, 1 when the letter or every blank verifies (blanks compared symbolically),
 * else 0 — the paper's binary verification reward, with no format reward beside it.
 *
 * Settings that transfer: the binary reward alone, GRPO group advantages. The paper trains RL from base
 * checkpoints with no SFT warm-start (0.5B–7B models); a from-scratch character model knows no
 * formula, so a short SFT on the task's teacher (a plausible slip on `teacherErrorRate` of its
 * answers) stands in for the base model's prior. Not here: the 4,027 problems from papers.
 */
import type { Recipe } from '../../src/index.js';

export default {
  config: {
    task: 'wireless-math',
    taskOptions: { teacherErrorRate: 0.4 },
    model: { hiddenSize: 64, numLayers: 2, numHeads: 4 },
    sft: { steps: 500, batchSize: 16, learningRate: 3e-3, warmupSteps: 20, schedule: 'cosine' },
    sampling: { groupSize: 8, maxNewTokens: 40, temperature: 1 },
    grpo: { steps: 100, promptsPerStep: 8, microBatchSize: 64, learningRate: 1e-4 },
    rewards: [{ name: 'wireless-math', weight: 1, options: {} }],
    evaluation: { examples: 60 },
    checkpoint: { every: 1000 },
    logging: { printEvery: 10 },
  },
} satisfies Recipe;
