/**
 * Graph-R1 (#178, "Graph-R1: Unleashing LLM Reasoning with NP-Hard Graph Problems"): GRPO on
 * NP-hard graph problems with exact verifiers and a fine-grained reward that gives partial credit
 * to feasible but suboptimal answers.
 * Run: `npx grpo train recipes/papers/graph-r1.ts`.
 *
 * Task: `graph-problems` (src/data/tasks/graph-problems.ts): shortest path, TSP, minimum vertex
 * cover and graph colouring on generated graphs of 4–5 nodes with exact optima (brute force); the
 * answer is the last `[A, C, D]` of the completion. Colouring is this repository's addition (not one
 * of Graph-R1's tasks), scored by the same rule.
 * Rewards, as the authors' `compute_score` (github.com/Graph-Reasoner/Graph-R1 at 5b260ed,
 * verl/verl/utils/reward_score/grapharena_norepeat.py): total = format + answer, both weight 1.
 *   - `graph-solution`: 2 for the optimum, 0.5·opt/value for a feasible suboptimal answer (TSP:
 *     0.5·(opt/value)²), −1 for a missing or infeasible one.
 *   - `regex` with `^<think>\n`: their format reward (1 when the completion opens a think block).
 * Settings that transfer (their verl/recipe/graph-r1/rl/7b_norepeat_stage1.sh): GRPO advantages,
 * group size 8, temperature 1, KL loss with β = 0.001 and the low-variance (k3) estimator, no
 * entropy bonus. Not here: their long-CoT SFT data (Graph-R1-SFT-30K), the curriculum over levels,
 * GraphArena's real-world graphs, the learning rate of a 7B model (1e-6; this small model uses 1e-4).
 * Measured (seed 0, native backend, 2 cores, 9 min): held-out mean reward (format + answer, at
 * most 3) 0.940 after SFT → 1.089 after 100 GRPO steps (+0.149), but held-out accuracy (the
 * optimum found) fell 13.3% → 8.3% and the training reward stayed between 0.46 and 0.98: no clear
 * learning at this size and length.
 */
import type { Recipe } from '../../src/index.js';

export default {
  config: {
    task: 'graph-problems',
    taskOptions: { teacherErrorRate: 0.4, minNodes: 4, maxNodes: 5 },
    model: { hiddenSize: 64, numLayers: 2, numHeads: 4 },
    sft: { steps: 400, batchSize: 16, learningRate: 3e-3, warmupSteps: 20, schedule: 'cosine' },
    sampling: { groupSize: 8, maxNewTokens: 40, temperature: 1 },
    algorithm: { advantage: 'grpo', klCoefficient: 0.001, klEstimator: 'k3' },
    grpo: { steps: 100, promptsPerStep: 8, microBatchSize: 64, learningRate: 1e-4 },
    rewards: [
      { name: 'graph-solution', weight: 1, options: {} },
      { name: 'regex', weight: 1, options: { pattern: '^<think>\\n' } },
    ],
    evaluation: { examples: 60 },
    checkpoint: { every: 1000 },
    logging: { printEvery: 10 },
  },
} satisfies Recipe;
