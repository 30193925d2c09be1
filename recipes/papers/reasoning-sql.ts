/**
 * Reasoning-SQL (#33, Pourreza et al. 2025, arXiv 2503.23157): text-to-SQL with GRPO and SQL-tailored
 * partial rewards beside execution accuracy. Run: `npx grpo train recipes/papers/reasoning-sql.ts`.
 *
 * Task: `text-to-sql` (src/data/tasks/text-to-sql.ts), questions over small SQLite databases the
 * task generates (no BIRD download); the completion is `<reasoning>tables</reasoning><answer>SQL</answer>`.
 * Rewards, each a built-in by name with its options (so `grpo serve-rewards --recipe` serves them):
 *   - `sql-execution`: the query returns the gold rows (1) or not (0).
 *   - `sql-syntax`: the query runs on the database.
 *   - `sql-schema-linking`: Jaccard of the table/column names the predicted and gold queries use.
 *   - `sql-ngram`: Jaccard of the two queries' token bigram sets.
 *   - `tag-format`: `<reasoning>…</reasoning><answer>…</answer>`.
 * Not here: the paper's AI-feedback reward (an LLM judge of the query); add
 * `{ name: 'llm-judge', options: { baseUrl, model, rubric } }` when an endpoint is at hand.
 *
 * Settings that transfer: GRPO with group-relative advantages, the reward set above, the output
 * format. The weights below (execution 1, each partial 0.2) are this recipe's choice so that a
 * correct query always outranks any near miss; the paper's own weights and optimiser settings for
 * its 7B/14B models were not checked here. The paper trains RL-only from an instruction-tuned model;
 * a from-scratch model has no such start, so a short SFT on the task's teacher (wrong on
 * `teacherErrorRate` of its demonstrations) stands in for it.
 */
import type { Recipe } from '../../src/index.js';

const tag = 'answer';

export default {
  config: {
    task: 'text-to-sql',
    taskOptions: { teacherErrorRate: 0.5 },
    model: { hiddenSize: 64, numLayers: 2, numHeads: 4 },
    sft: { steps: 600, batchSize: 16, learningRate: 3e-3, warmupSteps: 20, schedule: 'cosine' },
    sampling: { groupSize: 8, maxNewTokens: 130, temperature: 1 },
    grpo: { steps: 100, promptsPerStep: 8, microBatchSize: 64, learningRate: 1e-4 },
    rewards: [
      { name: 'sql-execution', weight: 1, options: { tag, executesScore: 0 } },
      { name: 'sql-syntax', weight: 0.2, options: { tag } },
      { name: 'sql-schema-linking', weight: 0.2, options: { tag } },
      { name: 'sql-ngram', weight: 0.2, options: { tag, n: 2 } },
      { name: 'tag-format', weight: 0.2, options: { tags: ['reasoning', 'answer'] } },
    ],
    evaluation: { examples: 60 },
    checkpoint: { every: 1000 },
    logging: { printEvery: 10 },
  },
} satisfies Recipe;
