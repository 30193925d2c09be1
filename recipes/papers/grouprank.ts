/**
 * GroupRank (#51, Sun et al. 2025, arXiv 2511.11653): groupwise reranking — the query and a group of
 * documents in one prompt, one relevance score per document out — trained with SFT then GRPO on a
 * reward that mixes ranking metrics with a distribution reward.
 * Run: `npx grpo train recipes/papers/grouprank.ts`.
 *
 * Task: `reranking` with `mode: groupwise` (src/data/tasks/reranking.ts): generated word documents
 * whose graded relevance (0–2) is exact; the answer is `<answer>2,0,1,0</answer>`.
 * Rewards, each a built-in by name with its options:
 *   - `ranking-ndcg`: NDCG of the order the scores induce (ties averaged, so equal scores earn a
 *     random order's NDCG).
 *   - `ranking-recall`: recall@R of the relevant documents (R = how many there are, so the gold order scores 1).
 *   - `score-distribution`: 1 − mean |score − grade| / maxScore, so scores are calibrated across
 *     groups. A substitute: the paper's distribution reward aligns score distributions across
 *     groups, but its exact formula was not available here (docs/paper-recipes.md).
 *   - `tag-format`: one `<answer>…</answer>`.
 * Settings that transfer: SFT warm-up then GRPO; the reward mix (weights here are this recipe's
 * choice, not the paper's, which were not checked). Not here: the paper's data-synthesis pipeline
 * (the task generates exact labels instead) and its 7B/32B models.
 */
import type { Recipe } from '../../src/index.js';

export default {
  config: {
    task: 'reranking',
    taskOptions: { mode: 'groupwise', documents: 4, teacherErrorRate: 0.4 },
    model: { hiddenSize: 64, numLayers: 2, numHeads: 4 },
    sft: { steps: 400, batchSize: 16, learningRate: 3e-3, warmupSteps: 20, schedule: 'cosine' },
    sampling: { groupSize: 8, maxNewTokens: 32, temperature: 1 },
    grpo: { steps: 100, promptsPerStep: 8, microBatchSize: 64, learningRate: 1e-4 },
    rewards: [
      { name: 'ranking-ndcg', weight: 1, options: {} },
      { name: 'ranking-recall', weight: 0.5, options: {} },
      { name: 'score-distribution', weight: 0.5, options: { maxScore: 2 } },
      { name: 'tag-format', weight: 0.2, options: { tags: ['answer'] } },
    ],
    evaluation: { examples: 60 },
    checkpoint: { every: 1000 },
    logging: { printEvery: 10 },
  },
} satisfies Recipe;
