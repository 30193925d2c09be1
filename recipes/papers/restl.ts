/**
 * RESTL (#145, Fang et al. 2025, arXiv 2511.08555): natural language to signal temporal logic,
 * trained with RL on several reward aspects aggregated into one signal.
 * Run: `npx grpo train recipes/papers/restl.ts`.
 *
 * Task: `nl-to-stl` (src/data/tasks/nl-to-stl.ts): generated requirements in templated English
 * ("always in 0 to 4 x above 3") with their gold formulas (`G[0,4] x>3`), six patterns over
 * signals x, y, z. The completion is the formula.
 * Rewards: RESTL's four metrics (src/rewards/stl.ts), summed with the paper's weights, plus a
 * semantic check logged at weight 0. From the paper (AAAI 2026 version, "Multi-aspect Metric",
 * "Reinforcement Learning for STL Generator", "Implementation Details"):
 *   - `stl-propositions` (`score: gold-recall`): m_a = |A(ŷ) ∩ A(y*)| / |A(y*)|, weight λ1 = 0.2.
 *   - `stl-templated-nl`: m_t, the formula rendered back to templated English against the
 *     requirement, weight λ2 = 0.25. The paper's m_t is the cosine of a BERT-like encoder's
 *     embeddings; ROUGE-L over words stands in for it.
 *   - `stl-succinctness` (`measure: characters`): m_l = 1 − ||y*| − |ŷ|| / |y*|, weight λ3 = 0.35.
 *   - `stl-symbols` (`measure: rouge-l`): m_s = ROUGE-L(y*, ŷ) over STL tokens, weight λ4 = 0.2.
 *   - `stl-traces`: agreement on satisfaction over 64 random traces (robustness), ours, weight 0.
 * r_total = r_RL − η·KL(G_θ ‖ G_θ0) with η = 0.05: the KL goes in the reward
 * (`algorithm.klPlacement: reward`), as the paper's PPO does.
 * Not here: the paper trains one LLaMA-3-8B reward model per metric on preference pairs the metric
 * ranks, with a curriculum, and feeds their outputs (scaled to [0, 1]) to PPO with a critic. The
 * metrics go to GRPO directly, which is the paper's own "metric supervision" variant (its Figure 4:
 * template accuracy 60.3% against 61.2% with the reward models). The DeepSTL / STL-DivEn data are
 * replaced by generated requirements.
 * Measured (seed 0, as written, 2 shared cores, 19 min): held-out mean reward (the weighted sum, at
 * most 1) 0.801 after SFT, 0.805, 0.798, 0.807 and 0.801 every 25 GRPO steps; held-out accuracy
 * 11.7% → 10.0%. With the earlier equal weights and stand-in measures: 3.806 → 3.806 (of 5),
 * 11.7% → 8.3%. No learning shown at this size and length.
 */
import type { Recipe } from '../../src/index.js';

export default {
  config: {
    task: 'nl-to-stl',
    taskOptions: { teacherErrorRate: 0.4 },
    model: { hiddenSize: 64, numLayers: 2, numHeads: 4 },
    sft: { steps: 400, batchSize: 16, learningRate: 3e-3, warmupSteps: 20, schedule: 'cosine' },
    sampling: { groupSize: 8, maxNewTokens: 36, temperature: 1 },
    algorithm: { klCoefficient: 0.05, klPlacement: 'reward' },
    grpo: { steps: 100, promptsPerStep: 8, microBatchSize: 64, learningRate: 1e-4 },
    rewards: [
      { name: 'stl-propositions', weight: 0.2, options: { score: 'gold-recall' } },
      { name: 'stl-templated-nl', weight: 0.25, options: {} },
      { name: 'stl-succinctness', weight: 0.35, options: { measure: 'characters' } },
      { name: 'stl-symbols', weight: 0.2, options: { measure: 'rouge-l' } },
      { name: 'stl-traces', weight: 0, options: { traces: 64 } },
    ],
    evaluation: { examples: 60 },
    checkpoint: { every: 1000 },
    logging: { printEvery: 10 },
  },
} satisfies Recipe;
