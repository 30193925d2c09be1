/**
 * RESTL (#145, Fang et al. 2025, arXiv 2511.08555): natural language to signal temporal logic,
 * trained with RL on several reward aspects aggregated into one signal.
 * Run: `npx grpo train recipes/papers/restl.ts`.
 *
 * Task: `nl-to-stl` (src/data/tasks/nl-to-stl.ts): generated requirements in templated English
 * ("always in 0 to 4 x above 3") with their gold formulas (`G[0,4] x>3`), six patterns over
 * signals x, y, z. The completion is the formula.
 * Rewards, one per RESTL aspect, each a rule-based stand-in for the paper's trained reward model
 * (src/rewards/stl.ts), plus a semantic check:
 *   - `stl-propositions`: atomic proposition consistency (F1 of the x>3 atoms).
 *   - `stl-templated-nl`: templated NL similarity (the formula rendered back to templated English,
 *     ROUGE-L against the requirement).
 *   - `stl-succinctness`: formula succinctness (gold size / predicted size, at most 1).
 *   - `stl-symbols`: STL-level symbol matching (token F1 with the gold formula).
 *   - `stl-traces`: agreement on satisfaction over 64 random traces (robustness), ours.
 * Aggregation: a weighted sum, equal weights — this recipe's choice; the paper aggregates its
 * models' outputs but its weights could not be read here. Settings that transfer: SFT first, then
 * RL with a KL penalty to the SFT model (β = 0.04 here). Not here: PPO with a critic (GRPO instead:
 * `--set algorithm.advantage=...` picks others), the reward models' curriculum training, the
 * DeepSTL / STL-DivEn data.
 * Measured (seed 0, native backend, 2 cores, 8.5 min): held-out mean reward (at most 5) 3.806 after
 * SFT and 3.806 after 100 GRPO steps; held-out accuracy 11.7% → 8.3%; training reward 3.07–3.42.
 * No learning shown at this size and length.
 */
import type { Recipe } from '../../src/index.js';

export default {
  config: {
    task: 'nl-to-stl',
    taskOptions: { teacherErrorRate: 0.4 },
    model: { hiddenSize: 64, numLayers: 2, numHeads: 4 },
    sft: { steps: 400, batchSize: 16, learningRate: 3e-3, warmupSteps: 20, schedule: 'cosine' },
    sampling: { groupSize: 8, maxNewTokens: 36, temperature: 1 },
    algorithm: { klCoefficient: 0.04 },
    grpo: { steps: 100, promptsPerStep: 8, microBatchSize: 64, learningRate: 1e-4 },
    rewards: [
      { name: 'stl-propositions', weight: 1, options: {} },
      { name: 'stl-templated-nl', weight: 1, options: {} },
      { name: 'stl-succinctness', weight: 1, options: {} },
      { name: 'stl-symbols', weight: 1, options: {} },
      { name: 'stl-traces', weight: 1, options: { traces: 64 } },
    ],
    evaluation: { examples: 60 },
    checkpoint: { every: 1000 },
    logging: { printEvery: 10 },
  },
} satisfies Recipe;
