/**
 * TempSamp-R1 (Li et al. 2025, arXiv 2509.18056, NeurIPS 2025, papers #209): temporal grounding with
 * mixed-policy GRPO. Two pieces on top of GRPO: every group of 8 holds 7 samples of the policy and
 * the row's ground truth (`grpo.groundTruthCompletion`, src/rollout/ground-truth.ts), which joins the
 * group's mean and deviation; and the IoU reward is shaped non-linearly (`temporal-iou` with
 * `shaping`: a near-flat plateau above τ = 0.8, an exponential ramp below) before the group
 * normalisation. Run: `npx grpo train recipes/papers/tempsamp-r1.ts` (a from-scratch toy model: SFT
 * for the format, then GRPO).
 *
 * From the open-source TempSamp-R1 (ZhangZikun6666/TempSamp-R1, which cites the paper; the authors'
 * HVision-NKU repository was not reachable here): scripts/timelens/timelens_reward.py (the reward,
 * its 0.1 format weight, the ground truth "<answer> start to end </answer>"),
 * verl/trainer/ray_trainer.py `_inject_gt_rollout_in_gen_output` (slot n − 1, EOS appended, π_old
 * recomputed), scripts/timelens/timelens_tempsamp.yaml (rollout.n 8, GRPO advantage with verl's
 * ε 1e-6, KL off, clip 0.2 / 0.28, temperature 1, top-p 0.85, the ground truth left out of the
 * logged reward). Differs: the "video" is six seconds told in text (what shows each second), not
 * TimeLens frames, and the spans are whole seconds ("2 to 4"); an SFT teacher that is off by a
 * second on half its demonstrations teaches the format first; learning rates are the toy model's
 * (theirs 1e-6). The toy does not learn to place spans in a short run: with sft.steps 600,
 * grpo.learningRate 1e-3 and 40 steps, held-out accuracy (IoU ≥ 0.8) went 30% → 25% with the
 * ground truth and 30% → 29% without it (measured here, one seed each).
 */
import { generatedSplit, type Example, type Pick, type Recipe, type Task } from '../../src/index.js';
import { parseSpan, temporalIou } from '../../src/rewards/index.js';

const SECONDS = 6;
const THINGS = ['cat', 'dog', 'car', 'bus'] as const;
const TEACHER_ERROR = 0.5;
const GROUND_TRUTH = '<answer> {answer} </answer>';

/** One clip: the asked-for thing in seconds [start, end), other seconds empty or another thing. */
function clipRow(pick: Pick): Example {
  const thing = THINGS[pick(THINGS.length)];
  const start = pick(SECONDS - 1);
  const end = Math.min(SECONDS, start + 1 + pick(3));
  const others = THINGS.filter((other) => other !== thing);
  const seconds = Array.from({ length: SECONDS }, (_, k) =>
    k >= start && k < end ? thing : pick(2) === 0 ? '-' : others[pick(others.length)],
  );
  return { prompt: `${seconds.join(',')}. When is the ${thing} seen?`, answer: `${start} to ${end}` };
}

const rows = (count: number, seed: number, heldOut: boolean) =>
  generatedSplit('tempsamp-clips', count, seed, heldOut, clipRow);

export const tempSampTask: Task = {
  name: 'tempsamp-clips',
  description: 'TempSamp-R1 temporal grounding: the seconds of a six-second clip (told in text) that show a thing',
  alphabet: [...new Set(`${THINGS.join('')},-.?Whenisthesn<answer> 0123456789 to </answer>`)].join(''),
  trainExamples: (count, seed) => rows(count, seed, false),
  evalExamples: (count, seed) => rows(count, seed, true),
  demonstration: (example, draw) => {
    const [start, end] = parseSpan(String(example.answer))!;
    const shifted =
      draw() < TEACHER_ERROR ? Math.min(SECONDS, Math.max(start + 1, end + (draw() < 0.5 ? -1 : 1))) : end;
    return GROUND_TRUTH.replace('{answer}', `${start} to ${shifted}`);
  },
  rewards: () => [],
  // Correct: the span overlaps the truth at IoU ≥ 0.8 (the shaping's success threshold).
  isCorrect: (example, completion) => {
    const predicted = parseSpan(completion);
    return predicted !== null && temporalIou(predicted, parseSpan(String(example.answer))!) >= 0.8;
  },
};

export default {
  config: {
    model: { hiddenSize: 64, numLayers: 2, numHeads: 4 },
    sft: { steps: 300, batchSize: 32, learningRate: 3e-3, warmupSteps: 20, schedule: 'cosine' },
    sampling: { groupSize: 8, maxNewTokens: 28, temperature: 1, topP: 0.85 }, // rollout.n = 8
    grpo: { steps: 60, promptsPerStep: 8, microBatchSize: 64, learningRate: 3e-4, groundTruthCompletion: GROUND_TRUTH },
    algorithm: {
      advantage: 'grpo',
      advantageOptions: { epsilon: 1e-6 },
      loss: 'ppo-clip',
      lossOptions: { epsilonLow: 0.2, epsilonHigh: 0.28 },
      aggregation: 'token-mean',
      klCoefficient: 0,
    },
    rewards: [
      { name: 'temporal-iou', weight: 1, options: { shaping: true, threshold: 0.8, alpha: 1 } },
      { name: 'temporal-format', weight: 0.1, options: {} },
    ],
    evaluation: { examples: 100, every: 20 },
    checkpoint: { every: 0 },
    logging: { printEvery: 10, samplesEvery: 10, samplesPerStep: 2 },
  },
  task: tempSampTask,
} satisfies Recipe;
