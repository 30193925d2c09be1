/**
 * VeriReason (#1) and VERIRL (#121): Verilog generation with GRPO and a testbench-simulation
 * reward. Run: `npx grpo train recipes/papers/verireason.ts` (needs Icarus Verilog:
 * `apt-get install -y iverilog`; the rewards refuse to start without it).
 *
 * Task: `verilog` (src/data/tasks/verilog.ts), small generated specs (adders, muxes, parity,
 * comparators, counters), each with a reference module and a self-checking testbench; the
 * completion is the module itself. Rewards, each a built-in by name with its options:
 *   - `verilog-testbench`: passed / all testbench checks, compiled with `iverilog` and simulated with
 *     `vvp` inside the code sandbox (time, memory, process and output limits); 0 when the design is
 *     refused (system tasks, directives, hierarchical references), does not compile, or is stopped.
 *   - `verilog-format`: exactly one `module NAME(ports) ... endmodule` with the spec's name and ports.
 * Not here: VeriReason's `<think>` reasoning format (a from-scratch character model has no room
 * for it; add `tag-format` and a fenced answer for an instruction-tuned model), VERIRL's
 * sample-balanced weighting and trace-back rescoring, and both papers' data (VeriReason-RTL-Coder,
 * VERIRL's Veribench): no download here.
 *
 * Weights: testbench 1, format 0.2, this recipe's choice (a functionally right module always
 * outranks a well-formed wrong one); the papers' own weights were not checked here. The papers
 * start from instruction-tuned Qwen2.5 models after SFT; here a short SFT on the task's teacher
 * (wrong on `teacherErrorRate` of its demonstrations) stands in for that.
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
      { name: 'verilog-format', weight: 0.2 },
    ],
    evaluation: { examples: 40 },
    checkpoint: { every: 1000 },
    logging: { printEvery: 10 },
  },
} satisfies Recipe;
