/**
 * VeriReason (#1) and VERIRL (#121): Verilog generation with GRPO and a testbench-simulation
 * reward. Run: `npx grpo train recipes/papers/verireason.ts` (needs Icarus Verilog:
 * `apt-get install -y iverilog`; the task and the rewards refuse to start without it).
 *
 * Task: `verilog` (src/data/tasks/verilog.ts), small generated specs (adders, muxes, parity,
 * comparators, counters), each with a gold module and a self-checking testbench; the completion is
 * the module itself. Rewards, each a built-in by name with its options (docs/paper-recipes.md):
 *   - `verilog-testbench` with VeriReason's own scoring (its defaults, read from the authors'
 *     GRPO/verilog_rewards_tb.py): 2.1 when ≥ 99% of the testbench's checks pass; else 0.1 +
 *     the structure score against the gold module when the design compiles alone; 0 when it does
 *     not compile, has no module or is under 20 characters. Weight 1, as in their trainer.
 *   - `verilog-format`, weight 0.1 (VeriReason's format reward is worth 0.1): style `module` (the
 *     row's module header), not the paper's `<think>…</think><answer>```verilog …```</answer>`
 *     layout, which a from-scratch character model has no room for; with an instruction-tuned
 *     model set `options: { style: 'think-answer' }` (the reward's default).
 * Settings from the authors' GRPO/verilog_grpo_tb.yaml that transfer: 8 samples per prompt.
 * That do not: learning rate 1e-6, temperature 0.5 with repetition penalty 1.3 and 1024-token
 * completions are for a 3B–7B Qwen2.5/CodeLlama after SFT on reasoning traces; here a tiny
 * character model after a short SFT on the task's teacher (wrong on `teacherErrorRate` of its
 * demonstrations) needs a larger step and full-temperature samples to find better modules.
 * Not here: VeriReason's data (RTL-Coder with reasoning and testbenches) and VERIRL's
 * (Veribench-53K), VERIRL's trace-back rescoring and sample-balanced weighting, whose code is not
 * released (github.com/omniAI-Lab/VeriRL README: RL training code "coming soon").
 */
import type { Recipe } from '../../src/index.js';

export default {
  config: {
    task: 'verilog',
    taskOptions: { teacherErrorRate: 0.5 },
    model: { hiddenSize: 64, numLayers: 2, numHeads: 4 },
    sft: { steps: 600, batchSize: 16, learningRate: 3e-3, warmupSteps: 20, schedule: 'cosine' },
    sampling: { groupSize: 8, maxNewTokens: 140, temperature: 1 },
    grpo: { steps: 100, promptsPerStep: 8, microBatchSize: 64, learningRate: 1e-4 },
    rewards: [
      { name: 'verilog-testbench', weight: 1, options: { timeoutMs: 10_000 } },
      { name: 'verilog-format', weight: 0.1, options: { style: 'module' } },
    ],
    evaluation: { examples: 40 },
    checkpoint: { every: 1000 },
    logging: { printEvery: 10 },
  },
} satisfies Recipe;
