/**
 * TraPO (#97; Yang, Zhu, Zheng, Ma, Chen, Song, Wang, Zhao, Chen, Wang 2025, "TraPO: A
 * Semi-Supervised Reinforcement Learning Framework for Boosting LLM Reasoning", arXiv 2512.13106,
 * ICLR 2026): a few labeled rows and many unlabeled ones. Labeled groups are scored against their
 * answer; unlabeled groups against their own majority answer, and an unlabeled prompt is trained on
 * only when its learning trajectory (its pass rate, visit after visit) looks like the labeled
 * prompts'. Run: `npx grpo train recipes/papers/trapo.ts`.
 *
 * Exact to the authors' trainer (github.com/ShenzhiYang2000/TRAPO,
 * Weakly_Supervised/Research/Semi_RL/semi_ray_trainer.py: `_generate_pseudo_labels_and_update_passrate`,
 * `_compute_trajectory_cosine`, `filter_dict_by_topk`, `filter_dict_by_threshold`,
 * `copy_dict_with_validation`, `_split_labeled_samples`; defaults from scripts/run/run_semi.sh):
 *   1. Every group adds its pass rate to its prompt's trajectory: a labeled group's share of
 *      completions whose answer verifies against the row's `answer`, an unlabeled group's share that
 *      match its majority answer. The majority must be unique: a tie (completions without an answer
 *      count as answers of their own, one vote each, as their parse failures do) leaves no
 *      pseudo-label and every completion scores 0.
 *   2. Warm-up (`warmUpSteps`, their `warm_up` 8): unlabeled groups leave the loss (their
 *      `_split_labeled_samples`); their trajectories still grow.
 *   3. After it, the reference set is every labeled trajectory (as `label_<prompt>`) plus, with
 *      `updateReference` (their `update_db`, on), a snapshot of each unlabeled trajectory chosen
 *      earlier (`unlabel_<prompt>`; adding one already there first drops every unlabeled entry,
 *      their `copy_dict_with_validation`). All are cut to the shortest reference's length L, each
 *      z-scored over time ((x − mean)/(sample std + 1e-8)), and an unlabeled prompt's score is the
 *      mean cosine similarity of its z-scored trajectory to the references (`trajectorySimilarity`).
 *   4. The step's unlabeled groups kept are the top max(1, ⌊n·topKRatio⌋) scores (their `topk`
 *      0.1) together with every score ≥ `threshold` (their `thres` 0.4); the rest leave the loss.
 *   5. GRPO over the groups kept: labeled ones with the true reward, unlabeled ones with the
 *      majority-vote reward. A group left out scores null under the `trapo` reward, and the
 *      recipe's `trapo-grpo` estimator (GRPO's) gives it keep = 0, as their `select_idxs` drops it.
 * Epochs: their trajectories gain one point per epoch, every prompt visited once an epoch. The
 * recipe draws its whole pool once a step (`grpo.drawTogether: epoch`, every row sharing the
 * column's value, promptsPerStep = the pool), so one step is one epoch and `warmUpSteps` counts
 * epochs, as theirs; recipes/papers/trapo-data.ts does the same for `--data` rows.
 * Where this differs, and why: under any other draw a point is one visit of the prompt. Their code
 * raises when an unlabeled trajectory is shorter than L; here that prompt is not chosen this step,
 * and with L < 2 (z-scores undefined) none is. Their unlabeled rows carry a hidden answer for
 * logging only; this reward never reads an unlabeled row's answer. The trajectories live in the
 * reward for the run (a `--resume`d run starts them afresh). Not here: their Qwen3 models, their
 * 1K/3K OpenR1 splits, 128 prompts a step and 15 epochs.
 */
import { z } from 'zod';
import {
  additionTask,
  defineAdvantageEstimator,
  extractFinalAnswer,
  grpoAdvantage,
  verifyMathAnswer,
  type AdvantageInput,
  type AdvantageOptions,
  type BatchReward,
  type Example,
  type Recipe,
  type RewardInput,
  type RewardValue,
  type Task,
} from '../../src/index.js';
import { answersMatch } from '../../src/rewards/math/verify.js';

/** The authors' defaults (scripts/run/run_semi.sh). */
export interface TrapoOptions {
  /** Steps during which unlabeled groups leave the loss (their `warm_up`, 8 epochs). */
  warmUpSteps?: number;
  /** Share of the step's unlabeled groups kept by score, at least one (their `topk`). */
  topKRatio?: number;
  /** Every unlabeled group scoring at least this is kept too (their `thres`). */
  threshold?: number;
  /** Chosen unlabeled trajectories join the reference set (their `update_db`). */
  updateReference?: boolean;
  /** The row column saying whether a row is labeled (true/false, "true"/"false", 1/0). */
  labeledColumn?: string;
}

const zScore = (values: readonly number[]): number[] => {
  const mean = values.reduce((a, b) => a + b, 0) / values.length;
  const variance = values.reduce((a, b) => a + (b - mean) ** 2, 0) / (values.length - 1);
  return values.map((value) => (value - mean) / (Math.sqrt(variance) + 1e-8));
};

const cosine = (a: readonly number[], b: readonly number[]): number => {
  const dot = a.reduce((sum, value, i) => sum + value * b[i]!, 0);
  const norms = Math.hypot(...a) * Math.hypot(...b);
  return norms === 0 ? 0 : dot / norms;
};

/**
 * Each query's mean cosine similarity to the references, every trajectory cut to the shortest
 * reference's length L and z-scored over time (the authors' `_compute_trajectory_cosine`, 'mean').
 * A query shorter than L, or every query when L < 2, scores NaN (not chosen).
 * @example
 * trajectorySimilarity([[0, 0.5, 1], [0.2, 0.4, 0.9]], [[0.1, 0.6, 0.8]]); // [0.9723…]
 */
export function trajectorySimilarity(references: readonly number[][], queries: readonly number[][]): number[] {
  const length = Math.min(...references.map((reference) => reference.length));
  if (references.length === 0 || length < 2) return queries.map(() => Number.NaN);
  const normalized = references.map((reference) => zScore(reference.slice(0, length)));
  return queries.map((query) => {
    if (query.length < length) return Number.NaN;
    const z = zScore(query.slice(0, length));
    return normalized.reduce((sum, reference) => sum + cosine(reference, z), 0) / normalized.length;
  });
}

/**
 * Which scores are kept: the top max(1, ⌊n·topKRatio⌋) (the earlier on a tie) together with every
 * score ≥ threshold (the authors' `filter_dict_by_topk` ∪ `filter_dict_by_threshold`). NaN is never kept.
 */
export function chooseByTrajectory(scores: readonly number[], topKRatio: number, threshold: number): boolean[] {
  const ranked = scores
    .map((score, index) => ({ score, index }))
    .filter(({ score }) => !Number.isNaN(score))
    .sort((a, b) => b.score - a.score || a.index - b.index);
  const top = new Set(ranked.slice(0, Math.max(1, Math.floor(scores.length * topKRatio))).map(({ index }) => index));
  return scores.map((score, index) => top.has(index) || score >= threshold);
}

/**
 * Majority-vote pseudo-rewards of one unlabeled group: 1 where the answer is the unique most common
 * one, else 0; a completion without an answer is an answer of its own (one vote), and a tie gives all 0.
 */
export function uniqueMajorityRewards(completions: readonly string[]): number[] {
  const representatives: string[] = [];
  const classes = completions.map((completion) => {
    const extracted = extractFinalAnswer(completion);
    if (extracted === null || extracted.statement.trim() === '') return -1;
    const found = representatives.findIndex((answer) => answersMatch(extracted.statement, answer));
    if (found >= 0) return found;
    representatives.push(extracted.statement);
    return representatives.length - 1;
  });
  const counts = representatives.map((_, answer) => classes.filter((c) => c === answer).length);
  const best = Math.max(1, ...counts);
  const tied = counts.filter((count) => count === best).length + (best === 1 ? classes.filter((c) => c < 0).length : 0);
  const majority = tied === 1 ? counts.indexOf(best) : -1;
  return classes.map((answer) => (majority >= 0 && answer === majority ? 1 : 0));
}

function isLabeled(row: Readonly<Record<string, unknown>>, column: string): boolean {
  const value = row[column];
  if (value === true || value === 'true' || value === 1 || value === '1') return true;
  if (value === false || value === 'false' || value === 0 || value === '0') return false;
  throw new Error(`trapo: row column "${column}" must be true or false, got ${JSON.stringify(value)}`);
}

/**
 * The `trapo` reward: scores a whole step (labeled groups against `answer`, unlabeled ones by
 * unique majority), grows each prompt's trajectory, and returns null for the unlabeled groups that
 * stay out of the loss. Its state lives as long as the run; make one per run.
 */
export function trapoReward(options: TrapoOptions = {}): BatchReward & { trajectories: TrapoTrajectories } {
  const { warmUpSteps = 8, topKRatio = 0.1, threshold = 0.4, updateReference = true } = options;
  const column = options.labeledColumn ?? 'labeled';
  const trajectories: TrapoTrajectories = { labeled: new Map(), unlabeled: new Map(), reference: new Map() };
  let lastStep = -1;
  return {
    scope: 'batch',
    trajectories,
    scoreBatch(inputs: readonly RewardInput[]) {
      const groups = groupsOf(inputs);
      // Evaluation scores one greedy completion per prompt: checked against `answer`, no trajectory touched.
      if (groups.every(({ size }) => size === 1))
        return inputs.map(({ completion, row }) =>
          row.answer === undefined || row.answer === null
            ? null
            : verifyMathAnswer(completion, String(row.answer))
              ? 1
              : 0,
        );
      const step = inputs[0]!.step;
      if (step < lastStep) for (const map of Object.values(trajectories)) map.clear(); // a new run in this process
      lastStep = step;
      const scores: RewardValue[] = new Array<RewardValue>(inputs.length).fill(null);
      const unlabeled: { key: string; start: number; size: number }[] = [];
      for (const { start, size } of groups) {
        const group = inputs.slice(start, start + size);
        const key = JSON.stringify(group[0]!.prompt);
        const labeled = isLabeled(group[0]!.row, column);
        const rewards = labeled
          ? labeledRewards(group, key)
          : uniqueMajorityRewards(group.map((input) => input.completion));
        const history = labeled ? trajectories.labeled : trajectories.unlabeled;
        history.set(key, [...(history.get(key) ?? []), rewards.reduce((a, b) => a + b, 0) / size]);
        rewards.forEach((reward, i) => (scores[start + i] = reward));
        if (!labeled) unlabeled.push({ key, start, size });
      }
      const kept = step >= warmUpSteps ? chooseUnlabeled(unlabeled.map(({ key }) => key)) : unlabeled.map(() => false);
      unlabeled.forEach(({ start, size }, g) => {
        if (!kept[g]) scores.fill(null, start, start + size);
      });
      return scores;
    },
  };

  /** Step 3 and 4 of the header: refresh the references, score, choose, and add the chosen. */
  function chooseUnlabeled(keys: readonly string[]): boolean[] {
    if (keys.length === 0) return [];
    for (const [key, rates] of trajectories.labeled) trajectories.reference.set(`label_${key}`, rates);
    const similarity = trajectorySimilarity(
      [...trajectories.reference.values()],
      keys.map((key) => trajectories.unlabeled.get(key)!),
    );
    const kept = chooseByTrajectory(similarity, topKRatio, threshold);
    if (updateReference)
      keys.forEach((key, g) => {
        if (!kept[g]) return;
        const name = `unlabel_${key}`;
        if (trajectories.reference.has(name))
          for (const entry of [...trajectories.reference.keys()])
            if (entry.startsWith('unlabel')) trajectories.reference.delete(entry);
        trajectories.reference.set(name, [...trajectories.unlabeled.get(key)!]);
      });
    return kept;
  }
}

/** The step's groups: each starts at a completion with indexInGroup 0 and holds `group.length` completions. */
function groupsOf(inputs: readonly RewardInput[]): { start: number; size: number }[] {
  const groups: { start: number; size: number }[] = [];
  for (let start = 0; start < inputs.length; start += inputs[start]!.group.length)
    groups.push({ start, size: inputs[start]!.group.length });
  return groups;
}

function labeledRewards(group: readonly RewardInput[], key: string): number[] {
  const answer = group[0]!.row.answer;
  if (answer === undefined || answer === null)
    throw new Error(`trapo: a labeled row has no "answer" column (prompt ${key})`);
  return group.map((input) => (verifyMathAnswer(input.completion, String(answer)) ? 1 : 0));
}

/** Per-prompt pass-rate trajectories (keyed by the prompt as JSON) and the reference set. */
export interface TrapoTrajectories {
  labeled: Map<string, number[]>;
  unlabeled: Map<string, number[]>;
  reference: Map<string, number[]>;
}

/**
 * `algorithm.advantage: trapo-grpo`: GRPO's advantage, with every sample its reward (option
 * `reward`, default `trapo`) left unscored given keep = 0, so an unlabeled group TraPO did not
 * choose leaves the loss (the run's combined reward alone would read it as 0).
 */
export function trapoAdvantage(input: AdvantageInput, options: AdvantageOptions & { reward?: string } = {}) {
  const { reward: name = 'trapo', ...grpoOptions } = options;
  const column = input.rewardNames?.indexOf(name) ?? -1;
  const scored = input.rewardComponents?.[column];
  if (column < 0 || !scored)
    throw new Error(`algorithm.advantageOptions.reward: the run has no reward named "${name}" (trapo-grpo)`);
  const rewards = Array.from(input.rewards as ArrayLike<number | null>, (reward, i) => {
    const own = scored[i];
    return own === null || own === undefined || Number.isNaN(own) ? null : reward;
  });
  return grpoAdvantage({ ...input, rewards }, grpoOptions);
}

export const trapoAdvantagePart = defineAdvantageEstimator({
  name: 'trapo-grpo',
  fn: trapoAdvantage,
  description: "GRPO's (r − mean_g)/(std_g + ε); samples the named reward (default trapo) leaves unscored get keep = 0",
  citation: 'TraPO (#97, arXiv 2512.13106), ShenzhiYang2000/TRAPO semi_ray_trainer.py; recipes/papers/trapo.ts',
  needs: ['rewardComponents'],
  options: z
    .object({ reward: z.string().min(1).describe('the run reward whose null leaves a sample out (default trapo)') })
    .partial()
    .strict(),
  refuses: (options, settings) => {
    const name = typeof options.reward === 'string' ? options.reward : 'trapo';
    return settings.rewardNames.includes(name)
      ? []
      : [
          `algorithm.advantageOptions.reward: "${name}" is not a reward of this run (rewards: ${settings.rewardNames.join(', ')})`,
        ];
  },
});

const addition = additionTask({ teacherCarryErrorRate: 0.3 });

/** Rows in the recipe's training set; every step draws all of them once (one step = one epoch). */
export const TRAPO_POOL_SIZE = 128;

/** Whether "a+b=" is a labeled row: about one problem in four (the paper's 1K labeled beside 3K unlabeled). */
export const isLabeledProblem = (a: number, b: number): boolean => (a * 7 + b) % 4 === 0;

/**
 * The first TRAPO_POOL_SIZE distinct addition problems of the seed, labeled by `isLabeledProblem`,
 * all sharing `epoch: 'all'` so that `grpo.drawTogether: epoch` with promptsPerStep = the pool draws
 * every row once a step.
 */
function trapoPool(seed: number): Example[] {
  const distinct = new Map<string, Example>();
  for (const example of addition.trainExamples(TRAPO_POOL_SIZE * 4, seed))
    distinct.set(String(example.prompt), example);
  return [...distinct.values()]
    .slice(0, TRAPO_POOL_SIZE)
    .map((example) => ({ ...example, labeled: isLabeledProblem(Number(example.a), Number(example.b)), epoch: 'all' }));
}

const trapoAddition: Task = {
  ...addition,
  name: 'addition-trapo',
  description: `two-digit addition: ${TRAPO_POOL_SIZE} rows, about one in four labeled (\`labeled\`), every row drawn once a step`,
  trainExamples: (count, seed) => {
    const pool = trapoPool(seed);
    return Array.from({ length: Math.max(count, pool.length) }, (_, index) => pool[index % pool.length]!);
  },
};

export default {
  config: {
    model: { hiddenSize: 64, numLayers: 2, numHeads: 4 },
    sft: { steps: 600, batchSize: 64, learningRate: 3e-3, warmupSteps: 20, schedule: 'cosine' },
    sampling: { groupSize: 4, maxNewTokens: 6, temperature: 1 },
    algorithm: { advantage: 'trapo-grpo' },
    grpo: { steps: 60, promptsPerStep: TRAPO_POOL_SIZE, learningRate: 1e-4, drawTogether: 'epoch' },
    evaluation: { examples: 300, every: 20 },
    checkpoint: { every: 1000 },
    logging: { printEvery: 10 },
  },
  task: trapoAddition,
  rewards: [{ name: 'trapo', reward: trapoReward(), weight: 1, columns: [{ column: 'labeled' }] }],
  parts: [trapoAdvantagePart],
} satisfies Recipe;
