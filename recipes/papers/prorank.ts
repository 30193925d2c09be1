/**
 * ProRank (#17, "Prompt Warmup via Reinforcement Learning for Small Language Models Reranking"): "prompt warm-up" of a small reranker with GRPO — the model learns
 * to answer a pointwise relevance prompt in the required form with the right binary label, before a
 * second stage reads fine-grained scores from its output.
 * Run: `npx grpo train recipes/papers/prorank.ts`.
 *
 * Task: `reranking` with `mode: pointwise` (src/data/tasks/reranking.ts): one query, one generated
 * document; the answer is `<answer>1</answer>` (relevant) or `<answer>0</answer>`.
 * Rewards, each a built-in by name with its options:
 *   - `exact-match` with `tag: answer`: the binary relevance label is right.
 *   - `tag-format` with `tags: [answer]`: the answer is in the required form.
 * Settings that transfer: the GRPO warm-up with a format reward and a binary relevance reward. The
 * weights (label 1, format 0.2) are this recipe's choice; the paper's were not checked here. Not
 * here: ProRank's second stage (fine-grained scores from the relevance token's probability), which
 * is scoring, not RL training.
 */
import type { Recipe } from '../../src/index.js';

export default {
  config: {
    task: 'reranking',
    taskOptions: { mode: 'pointwise', teacherErrorRate: 0.4 },
    model: { hiddenSize: 64, numLayers: 2, numHeads: 4 },
    sft: { steps: 300, batchSize: 16, learningRate: 3e-3, warmupSteps: 20, schedule: 'cosine' },
    sampling: { groupSize: 8, maxNewTokens: 24, temperature: 1 },
    grpo: { steps: 100, promptsPerStep: 16, microBatchSize: 128, learningRate: 1e-4 },
    rewards: [
      { name: 'exact-match', weight: 1, options: { tag: 'answer' } },
      { name: 'tag-format', weight: 0.2, options: { tags: ['answer'] } },
    ],
    evaluation: { examples: 100 },
    checkpoint: { every: 1000 },
    logging: { printEvery: 10 },
  },
} satisfies Recipe;
