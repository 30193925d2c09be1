/**
 * Co-Reward (#94, Zhang et al. 2025, "Co-Reward: Self-supervised Reinforcement Learning for Large
 * Language Model Reasoning via Contrastive Agreement", arXiv 2508.00410): label-free RL where a
 * question and its rephrasing label each other — the majority answer of one's group is the other's
 * pseudo-label. Run: `npx grpo train recipes/papers/co-reward.ts`.
 *
 * The parts, each selected by name:
 *   - reward `co-reward` (src/rewards/co-reward.ts, checked against the authors' co_reward.py): 1 when
 *     the completion's final answer equals the majority answer of its partner group, else 0. The
 *     dataset's answers are never read.
 *   - `grpo.drawTogether: pair_id`: a question and its rephrasing are drawn into the same step, as
 *     the authors' trainer rolls out each original batch beside its rephrased one.
 *   - the advantage is GRPO's over each group separately, as theirs (`compute_advantage_contrastive`).
 * The task below is the addition task with each training problem "a+b=" paired with its rephrasing
 * "b+a=" (same `pair_id`; problems with a = b are left out, having no second form, and so is a pair
 * whose either order is in the held-out split). SFT comes from a teacher that forgets the carry on
 * 30% of the carry problems, so the SFT model's majority answer is usually right; held-out accuracy
 * (the task's exact check, never seen by the reward) says whether the label-free signal helped.
 * Not here: the paper's rephrasings (MATH questions rewritten by Qwen3-32B) and its Qwen models.
 */
import { additionTask, isHeldOut, type Example, type Recipe, type Task } from '../../src/index.js';

/** The teacher's rate of forgotten carries on the problems that need one. */
const TEACHER_CARRY_ERROR_RATE = 0.3;

const addition = additionTask({ teacherCarryErrorRate: TEACHER_CARRY_ERROR_RATE });

/** "a+b=" and its rephrasing "b+a=", one `pair_id` (the smaller operand first). */
function pairOf(example: Example): Example[] {
  const a = Number(example.a);
  const b = Number(example.b);
  const pairId = `${Math.min(a, b)}+${Math.max(a, b)}`;
  return [
    { ...example, pair_id: pairId },
    { prompt: `${b}+${a}=`, answer: example.answer, a: b, b: a, pair_id: pairId },
  ];
}

const pairedAddition: Task = {
  ...addition,
  name: 'addition-rephrased',
  description: 'two-digit addition, each training problem beside its rephrasing b+a (Co-Reward pairs)',
  trainExamples: (count, seed) =>
    addition
      .trainExamples(count, seed)
      .filter((example) => example.a !== example.b && !isHeldOut(Number(example.b), Number(example.a)))
      .flatMap(pairOf)
      .slice(0, count - (count % 2)),
};

export default {
  config: {
    model: { hiddenSize: 64, numLayers: 2, numHeads: 4 },
    sft: { steps: 600, batchSize: 64, learningRate: 3e-3, warmupSteps: 20, schedule: 'cosine' },
    sampling: { groupSize: 8, maxNewTokens: 6, temperature: 1 },
    rewards: [{ name: 'co-reward' }],
    grpo: { steps: 100, promptsPerStep: 16, learningRate: 1e-4, drawTogether: 'pair_id' },
    evaluation: { examples: 300, every: 50 },
    checkpoint: { every: 1000 },
    logging: { printEvery: 10 },
  },
  task: pairedAddition,
} satisfies Recipe;
