/**
 * MASA (#253, Kim, Jang & Yang 2025, "Meta-Awareness Enhances Reasoning Models: Self-Alignment
 * Reinforcement Learning", arXiv 2510.03259): beside each problem's solution group, the policy rolls
 * out a meta group that predicts, before solving, the notions a solution needs, how many of 8 tries
 * pass and how long a solution is; the meta completions are rewarded by how well that matches the
 * solution group of the same step. Run: `npx grpo train recipes/papers/masa.ts`.
 *
 * The parts, each selected by name:
 *   - reward `masa` (src/rewards/masa.ts, checked against the authors' meta_cog.py `compute_score`):
 *     solution rows score the task's check; meta rows (column `masa_role` "meta") score
 *     (notion + 0.01^|pass-rate error| + length in range) / 3.
 *   - `grpo.drawTogether: pair_id`: a problem's solution row and meta row are drawn into the same
 *     step, as the authors' trainer rolls out both for every prompt of a batch; each is its own
 *     group, normalised on its own (their meta uid is the problem's with "_meta_cog").
 * The task is the addition task with each training problem "a+b=" beside a meta row "?a+b=". SFT
 * teaches the meta rows a prediction in the authors' JSON form ({"math_notion": [...], "pass_rate":
 * n, "solution_length": n}) with drawn values, so GRPO has predictions to score. The character
 * model's context (256) cannot hold the authors' meta prompt (`MASA_META_PROMPT` below, for data of
 * your own: `--data rows.jsonl --reward masa --set grpo.drawTogether=pair_id`, docs/algorithms.md).
 * Not here: the paper's Qwen3 models and DeepScaleR data, and what the released code leaves off by
 * default (feeding the prediction into the solution prompt, meta SFT on expert trajectories).
 */
import { additionTask, type Example, type Recipe, type Task } from '../../src/index.js';

/** The authors' meta prompt (masa_train/masa_rl_dataset.py), {problem} and {maxLength} to fill in. */
export const MASA_META_PROMPT = `Think step-by-step between <meta> and </meta>, ensuring comprehensive and detailed reasoning especially for determining the pass_rate and solution_length values. For each component (math_notion, pass_rate, solution_length), provide a comprehensive illustration or example during your reasoning in the <meta> section to clarify how each value is decided. When determining math_notion, ensure that the notions listed do not directly include the notions already written in the problem statement. After </meta>, return a JSON object with three keys:
- math_notion (list[str])
- pass_rate (integer from 0 to 8)
- solution_length (integer from 128 to {maxLength})

Problem: {problem}`;

const addition = additionTask({ teacherCarryErrorRate: 0.3 });

/** "a+b=" and its meta row "?a+b=", one `pair_id`. */
function withMetaRow(example: Example): Example[] {
  const pairId = `${example.a}+${example.b}`;
  return [
    { ...example, pair_id: pairId },
    { ...example, prompt: `?${example.prompt}`, pair_id: pairId, masa_role: 'meta' },
  ];
}

/** A teacher prediction in the authors' JSON form: a notion, a drawn pass rate and length. */
function metaDemonstration(example: Example, draw: () => number): string {
  const needsCarry = (Number(example.a) % 10) + (Number(example.b) % 10) >= 10;
  const notion = needsCarry ? 'carry' : 'sum';
  return `{"math_notion": ["${notion}"], "pass_rate": ${Math.floor(draw() * 9)}, "solution_length": ${1 + Math.floor(draw() * 4)}}`;
}

const masaAddition: Task = {
  ...addition,
  name: 'addition-masa',
  description:
    'two-digit addition, each training problem beside a MASA meta row predicting notions, pass rate and length',
  alphabet: `${addition.alphabet}?{}[]":,_ abcdefghijklmnopqrstuvwxyz`,
  trainExamples: (count, seed) =>
    addition
      .trainExamples(Math.ceil(count / 2), seed)
      .flatMap(withMetaRow)
      .slice(0, count - (count % 2)),
  demonstration: (example, draw) =>
    example.masa_role === 'meta' ? metaDemonstration(example, draw) : addition.demonstration(example, draw),
};

export default {
  config: {
    model: { hiddenSize: 64, numLayers: 2, numHeads: 4 },
    sft: { steps: 600, batchSize: 64, learningRate: 3e-3, warmupSteps: 20, schedule: 'cosine' },
    sampling: { groupSize: 8, maxNewTokens: 64, temperature: 1 },
    rewards: [{ name: 'masa' }],
    grpo: { steps: 100, promptsPerStep: 16, learningRate: 1e-4, drawTogether: 'pair_id' },
    evaluation: { examples: 300, every: 50 },
    checkpoint: { every: 1000 },
    logging: { printEvery: 10 },
  },
  task: masaAddition,
} satisfies Recipe;
