/**
 * AlphaDrive (#69, Jiang et al. 2025, arXiv 2503.07608): GRPO with four planning rewards after an
 * SFT stage, for driving meta-action planning. Run: `npx grpo train recipes/papers/alphadrive.ts`.
 *
 * Task: `driving-planning` (src/data/tasks/driving-planning.ts) generates driving scenes told in
 * text (ego speed, navigation command, red light, the car ahead, free side lanes) whose gold plan is
 * one SPEED action (KEEP, ACCELERATE, DECELERATE, STOP) and one PATH action (STRAIGHT, LEFT_CHANGE,
 * RIGHT_CHANGE, LEFT_TURN, RIGHT_TURN), answered `<think>…</think><answer> STOP, LEFT_TURN </answer>`.
 * Rewards, as the authors' three reward functions (hustvl/AlphaDrive src/r1-v/src/open_r1/grpo.py),
 * summed with weight 1 each as their trainer sums them:
 *   - `plan-speed`, `plan-path`: the paper's planning accuracy (F1 of the plan's actions), action
 *     weight (the mean weight of the planned actions) and planning diversity (+0.4 when no earlier
 *     completion of the group planned the same action, else −0.4), F1 · weight ± 0.4;
 *   - `plan-format`: 1 for `<think>…</think><answer>…</answer>`, else 0.
 * Settings from the authors' trainer and launch script (train_tools/run_train_grpo.sh,
 * src/r1-v/src/open_r1/trainer/grpo_trainer.py) that transfer: 2 samples per prompt, one group per
 * reward call (the diversity term counts within the group), loss per sequence token-mean then mean
 * over sequences, KL β 0.04 (TRL's default there), one policy update per batch.
 * That do not: the paper's stage one distils reasoning from a large model into Qwen2-VL-2B; here a
 * from-scratch character model learns from the task's teacher, who misses one cue of the scene on
 * `teacherErrorRate` of its demonstrations, and takes a larger learning rate.
 * Not here: the camera images and the MetaAD data set (the scene is told in text, so the model's
 * perception is not trained, only the planning).
 */
import type { Recipe } from '../../src/index.js';

export default {
  config: {
    task: 'driving-planning',
    taskOptions: { teacherErrorRate: 0.4 },
    model: { hiddenSize: 64, numLayers: 2, numHeads: 4 },
    sft: { steps: 500, batchSize: 16, learningRate: 3e-3, warmupSteps: 20, schedule: 'cosine' },
    sampling: { groupSize: 2, maxNewTokens: 100, temperature: 1 },
    grpo: { steps: 100, promptsPerStep: 16, microBatchSize: 32, learningRate: 1e-4 },
    algorithm: { aggregation: 'seq-mean-token-mean', klCoefficient: 0.04 },
    rewards: [
      { name: 'plan-speed', weight: 1, options: {} },
      { name: 'plan-path', weight: 1, options: {} },
      { name: 'plan-format', weight: 1, options: {} },
    ],
    evaluation: { examples: 60 },
    checkpoint: { every: 1000 },
    logging: { printEvery: 10 },
  },
} satisfies Recipe;
