/**
 * Guru (#108, Cheng et al. 2025, arXiv 2506.14965, "Revisiting Reinforcement Learning for LLM Reasoning
 * from A Cross-Domain Perspective"): one RL run over several reasoning domains, each row scored by its
 * own domain's verifier. Run: `npx grpo train recipes/papers/guru.ts`.
 *
 * Task: `multi-domain` (src/data/tasks/multi-domain.ts) mixes generated tasks, each row tagged with
 * its `domain`:
 *   - math: `addition` (a bare number; the teacher forgets carries),
 *   - tabular: `text-to-sql` (questions over small SQLite databases),
 *   - code: `verilog` (RTL modules checked by an iverilog testbench; needs `apt-get install -y iverilog`),
 *   - science: `wireless-math` (WirelessMathBench-XL-style [MASK] formulas, recipes/papers/wireless-math.ts;
 *     its multiple-choice prompts are left out, as four options would not fit the 256 positions).
 * Reward: `domain-router`, a built-in by name that scores each row with its domain's verifier, as
 * Guru's training code dispatches on the row's data source (github.com/LLM360/Reasoning360,
 * verl/utils/reward_score default_compute_score). Every verifier here is binary or a pass fraction in
 * [0, 1], as Guru's are. metrics.jsonl gets `domain/<name>/reward/mean` each step and
 * `eval/domain/<name>/accuracy` at each evaluation.
 *
 * Settings that transfer: domains mixed uniformly in one run (the paper's Guru-7B/32B mix all six
 * domains), per-domain verifiable rewards, GRPO-style group advantages. Not here: the 92K corpus,
 * its difficulty filtering and the PPO/verl settings for 7B/32B models; a from-scratch model needs a
 * short SFT on the domain teachers, each wrong on part of its demonstrations.
 */
import type { Recipe } from '../../src/index.js';

export default {
  config: {
    task: 'multi-domain',
    taskOptions: {
      domains: {
        math: { task: 'addition' },
        tabular: { task: 'text-to-sql', options: { teacherErrorRate: 0.5 } },
        code: { task: 'verilog', options: { teacherErrorRate: 0.5 } },
        science: { task: 'wireless-math', options: { teacherErrorRate: 0.5, types: ['fill_blank', 'full_equation'] } },
      },
    },
    model: { hiddenSize: 64, numLayers: 2, numHeads: 4 },
    sft: { steps: 800, batchSize: 16, learningRate: 3e-3, warmupSteps: 20, schedule: 'cosine' },
    sampling: { groupSize: 8, maxNewTokens: 130, temperature: 1 },
    grpo: { steps: 100, promptsPerStep: 8, microBatchSize: 64, learningRate: 1e-4 },
    rewards: [
      {
        name: 'domain-router',
        weight: 1,
        options: {
          routes: {
            math: { name: 'math-answer' },
            tabular: { name: 'sql-execution', options: { tag: 'answer', executesScore: 0 } },
            code: { name: 'verilog-testbench', options: { scoring: 'pass-fraction', timeoutMs: 10_000 } },
            science: { name: 'wireless-math' },
          },
        },
      },
    ],
    evaluation: { examples: 48 },
    checkpoint: { every: 1000 },
    logging: { printEvery: 10 },
  },
} satisfies Recipe;
