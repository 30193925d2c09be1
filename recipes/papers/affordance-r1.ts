/**
 * Affordance-R1 (Wang et al. 2025, arXiv 2508.06206, papers #16): GRPO for affordance grounding with
 * the think → rethink → answer format and the authors' five summed rewards. The answer is a JSON list
 * of objects `{"bbox_2d": [x1, y1, x2, y2], "point_2d": [x, y], "affordance": NAME}`. Run:
 * `npx grpo train recipes/papers/affordance-r1.ts` (a from-scratch toy VLM: SFT for the format, then
 * GRPO).
 *
 * From the authors' hq-King/Affordance-R1 (read at d84efcd): verl/utils/reward_score/aff_r1.py
 * `aff_r1_score` = format + accuracy + non-repeat + affordance + box count:
 * - format: 1 when the whole completion is `<think>.*?</think>\s*<rethink>.*?</rethink>\s*<answer>.*?</answer>`
 *   (dot matching newlines), plus, for the JSON in the first `<answer>\s*(.*?)\s*</answer>`, each item's
 *   share (1 / item count) of: `bbox_2d` a list of 4, `point_2d` a list of 2, an `affordance` key;
 * - accuracy: predicted and true objects matched one-to-one by the assignment of least cost
 *   3 − [IoU > 0.65] − [mean |Δbox| < 10] − [point within 30 of the truth's and inside its own box]
 *   (scipy's linear_sum_assignment; IoU with the +1-pixel convention), the matched total over the larger
 *   of the two counts;
 * - non-repeat: 0 when two or more '.'-separated sentences repeat an earlier one, else 1;
 * - affordance: 1 when the word-vector similarity of the predicted affordance names to the row's name is
 *   over 0.8 (gensim's KeyedVectors.similarity with GoogleNews word2vec: one predicted object, a word
 *   in the vocabulary, cosine > 0.8; anything else raises and scores 0);
 * - box count: 1 when the answer lists as many objects as the truth.
 * Any error in a part (bad JSON, a missing key) scores that part 0, keeping what the format part had
 * summed before it, as their try/except. verl/workers/reward/custom.py calls the score with the row's
 * `solution`, `aff_name` and `part_name` (the part-name reward is commented out in their code).
 * training_scripts/aff_r1.yaml: GRPO, 8 rollouts, KL loss 5e-3 low_var_kl (k3), no KL in the reward;
 * the loss is the EasyR1 framework's (token mean, clip 0.2), not in the released files.
 * Differs: images are shape-locating's generated ones, the "affordance" is the shape's name (square /
 * plus) and the word vectors are a toy table (GoogleNews word2vec is not here; `affordanceR1Score`
 * takes any table); coordinates are the toy image's pixels times 28 (Qwen2.5-VL's 28-pixel patches),
 * so the pixel thresholds keep their scale; the SFT teacher boxes the same-colour distractor on a
 * share of the problems, so GRPO has the shape to learn; the learning rates are the toy model's.
 */
import { type Example, type NamedReward, type Recipe, type Task } from '../../src/index.js';
import { shapeLocatingTask } from '../../src/data/tasks/shape-locating.js';

/** A word → vector table, as gensim's KeyedVectors. */
export type WordVectors = ReadonlyMap<string, readonly number[]>;

/** JSON of the first `<answer>\s*(.*?)\s*</answer>` (dot matching newlines); throws as json.loads. */
function answerJson(completion: string): unknown {
  const match = /<answer>\s*([\s\S]*?)\s*<\/answer>/.exec(completion);
  if (!match) throw new Error('no answer');
  return JSON.parse(match[1]);
}

/** Python's `len()` of a JSON value; throws for numbers, booleans and null. */
function pythonLength(value: unknown): number {
  if (typeof value === 'string' || Array.isArray(value)) return [...value].length;
  if (typeof value === 'object' && value !== null) return Object.keys(value).length;
  throw new TypeError('object has no len()');
}

/** Python's iteration of a JSON value: list items, dict keys, string characters. */
function pythonItems(value: unknown): unknown[] {
  if (Array.isArray(value)) return value;
  if (typeof value === 'string') return [...value];
  if (typeof value === 'object' && value !== null) return Object.keys(value);
  throw new TypeError('not iterable');
}

/** Python's `key in item`: a dict's key, a string's substring, a list's element; throws otherwise. */
function pythonIn(key: string, item: unknown): boolean {
  if (typeof item === 'string') return item.includes(key);
  if (Array.isArray(item)) return item.includes(key);
  if (typeof item === 'object' && item !== null) return key in item;
  throw new TypeError('argument is not iterable');
}

/** Python's `item[key]` for a JSON value and a string key; throws unless item is a dict holding it. */
function pythonGet(item: unknown, key: string): unknown {
  if (typeof item === 'object' && item !== null && !Array.isArray(item) && key in item)
    return (item as Record<string, unknown>)[key];
  throw new TypeError(`no ${key}`);
}

/** `aff_r1_score_format_reward`: the think/rethink/answer fullmatch plus the answer items' keys. */
export function affordanceR1Format(completion: string): number {
  const thinking = /^<think>[\s\S]*?<\/think>\s*<rethink>[\s\S]*?<\/rethink>\s*<answer>[\s\S]*?<\/answer>$/.test(
    completion,
  )
    ? 1
    : 0;
  let segmentation = 0;
  try {
    const data = answerJson(completion);
    const count = pythonLength(data);
    for (const item of pythonItems(data)) {
      let current = 0;
      if (pythonIn('bbox_2d', item)) {
        const box = pythonGet(item, 'bbox_2d');
        if (Array.isArray(box) && box.length === 4) current += 1;
      }
      if (pythonIn('point_2d', item)) {
        const point = pythonGet(item, 'point_2d');
        if (Array.isArray(point) && point.length === 2) current += 1;
      }
      if (pythonIn('affordance', item)) current += 1;
      segmentation += current / count;
    }
  } catch {
    // As their try/except: the items summed before the error count.
  }
  return thinking + segmentation;
}

/** A list of equal-length number lists (numpy would refuse anything else in the arithmetic). */
function numberRows(values: unknown[], width: number): number[][] {
  return values.map((value) => {
    if (!Array.isArray(value) || value.length !== width || !value.every((x) => typeof x === 'number'))
      throw new TypeError(`expected ${width} numbers`);
    return value as number[];
  });
}

/**
 * The least-cost assignment of a rectangular cost matrix (rows × columns), as scipy's
 * linear_sum_assignment: min(rows, columns) pairs. The Hungarian method with potentials (O(n²m)).
 */
export function leastCostAssignment(cost: readonly (readonly number[])[]): [number, number][] {
  const transposed = cost.length > (cost[0]?.length ?? 0);
  const matrix = transposed ? cost[0].map((_, j) => cost.map((row) => row[j])) : cost.map((row) => [...row]);
  const n = matrix.length;
  const m = matrix[0]?.length ?? 0;
  if (n === 0 || m === 0) return [];
  const u = new Array<number>(n + 1).fill(0);
  const v = new Array<number>(m + 1).fill(0);
  const owner = new Array<number>(m + 1).fill(0); // owner[j]: the row (1-based) assigned to column j
  const way = new Array<number>(m + 1).fill(0);
  for (let i = 1; i <= n; i++) {
    owner[0] = i;
    let column = 0;
    const minimum = new Array<number>(m + 1).fill(Infinity);
    const used = new Array<boolean>(m + 1).fill(false);
    do {
      used[column] = true;
      const row = owner[column];
      let delta = Infinity;
      let next = 0;
      for (let j = 1; j <= m; j++) {
        if (used[j]) continue;
        const reduced = matrix[row - 1][j - 1] - u[row] - v[j];
        if (reduced < minimum[j]) {
          minimum[j] = reduced;
          way[j] = column;
        }
        if (minimum[j] < delta) {
          delta = minimum[j];
          next = j;
        }
      }
      for (let j = 0; j <= m; j++) {
        if (used[j]) {
          u[owner[j]] += delta;
          v[j] -= delta;
        } else minimum[j] -= delta;
      }
      column = next;
    } while (owner[column] !== 0);
    do {
      const previous = way[column];
      owner[column] = owner[previous];
      column = previous;
    } while (column !== 0);
  }
  const pairs: [number, number][] = [];
  for (let j = 1; j <= m; j++)
    if (owner[j] !== 0) pairs.push(transposed ? [j - 1, owner[j] - 1] : [owner[j] - 1, j - 1]);
  return pairs.sort((a, b) => a[0] - b[0]);
}

/** `batch_iou` for one pair, with the +1-pixel convention of their code. */
function iou(a: readonly number[], b: readonly number[]): number {
  const inter =
    Math.max(0, Math.min(a[2], b[2]) - Math.max(a[0], b[0]) + 1) *
    Math.max(0, Math.min(a[3], b[3]) - Math.max(a[1], b[1]) + 1);
  const areaA = (a[2] - a[0] + 1) * (a[3] - a[1] + 1);
  const areaB = (b[2] - b[0] + 1) * (b[3] - b[1] + 1);
  return inter / (areaA + areaB - inter);
}

/** `aff_r1_score_accuracy_reward`: matched box/point hits over the larger object count. */
export function affordanceR1Accuracy(completion: string, solution: string): number {
  const MAX_OBJECTS = 120;
  try {
    const truth = pythonItems(JSON.parse(solution));
    const truthBoxes = numberRows(
      truth.map((item) => pythonGet(item, 'bbox_2d')),
      4,
    ).slice(0, MAX_OBJECTS);
    const truthPoints = numberRows(
      truth.map((item) => pythonGet(item, 'point_2d')),
      2,
    ).slice(0, MAX_OBJECTS);
    const predicted = pythonItems(answerJson(completion));
    const boxes = numberRows(
      predicted.map((item) => pythonGet(item, 'bbox_2d')),
      4,
    ).slice(0, MAX_OBJECTS);
    const points = numberRows(
      predicted.map((item) => pythonGet(item, 'point_2d')),
      2,
    ).slice(0, MAX_OBJECTS);
    // numpy's np.split(…, 4, axis=1) fails on an empty array: an empty list scores 0.
    if (boxes.length === 0 || truthBoxes.length === 0) return 0;
    const cost = boxes.map((box, i) => {
      const inside =
        points[i][0] >= box[0] && points[i][0] <= box[2] && points[i][1] >= box[1] && points[i][1] <= box[3];
      return truthBoxes.map((truthBox, j) => {
        const l1 = box.reduce((sum, x, k) => sum + Math.abs(x - truthBox[k]), 0) / 4;
        const distance = Math.hypot(points[i][0] - truthPoints[j][0], points[i][1] - truthPoints[j][1]);
        return 3 - ((iou(box, truthBox) > 0.65 ? 1 : 0) + (l1 < 10 ? 1 : 0) + (distance < 30 && inside ? 1 : 0));
      });
    });
    const pairs = leastCostAssignment(cost);
    const total = pairs.length * 3 - pairs.reduce((sum, [i, j]) => sum + cost[i][j], 0);
    return total / Math.max(boxes.length, truthBoxes.length);
  } catch {
    return 0;
  }
}

/** `aff_r1_score_non_repeat_reward`: 0 once a second sentence repeats an earlier one. */
export function affordanceR1NonRepeat(completion: string): number {
  const seen = new Set<string>();
  let repeats = 0;
  for (const sentence of completion
    .split('.')
    .map((s) => s.trim())
    .filter((s) => s !== '')) {
    if (seen.has(sentence)) repeats += 1;
    if (repeats >= 2) return 0;
    seen.add(sentence);
  }
  return 1;
}

/**
 * `aff_reward_compute_score`: gensim's similarity(predicted names, truth) > 0.8. With one predicted
 * name it is the cosine of the two words' vectors; more names make their numpy comparison ambiguous
 * (an error, 0), a word outside the table raises KeyError (0).
 */
export function affordanceR1Name(completion: string, truth: string, vectors: WordVectors): number {
  try {
    const names = pythonItems(answerJson(completion)).map((item) => pythonGet(item, 'affordance'));
    const truthVector = vectors.get(truth);
    if (names.length !== 1 || typeof names[0] !== 'string' || !truthVector) return 0;
    const vector = vectors.get(names[0]);
    if (!vector) return 0;
    const dot = vector.reduce((sum, x, k) => sum + x * truthVector[k], 0);
    return dot / (Math.hypot(...vector) * Math.hypot(...truthVector)) > 0.8 ? 1 : 0;
  } catch {
    return 0;
  }
}

/** The box-count reward: 1 when the answer lists as many objects as the truth. */
export function affordanceR1BoxCount(completion: string, solution: string): number {
  try {
    return pythonLength(answerJson(completion)) === pythonLength(JSON.parse(solution)) ? 1 : 0;
  } catch {
    return 0;
  }
}

/** Coordinates in the answer: the toy image's pixels times Qwen2.5-VL's 28-pixel patch. */
const SCALE = 28;
/** Toy word vectors for the two affordance names (GoogleNews word2vec is not here). */
export const toyWordVectors: WordVectors = new Map([
  ['square', [1, 0.2, 0]],
  ['plus', [0, 0.2, 1]],
]);
/** Their prompt's request, shortened to the tags (the JSON's keys are learnt in SFT) (the toy model has 256 positions). */
const INSTRUCTION = ' Reply <think></think><rethink></rethink><answer>JSON</answer>.';

/** The JSON answer of one object (their `solution` column's form). */
function objectJson(box: readonly number[], affordance: string): string {
  const scaled = box.map((x) => x * SCALE);
  const point = [(scaled[0] + scaled[2]) / 2, (scaled[1] + scaled[3]) / 2].map(Math.round);
  return JSON.stringify([{ bbox_2d: scaled, point_2d: point, affordance }]);
}

/** The shape-locating row with Affordance-R1's solution (JSON), affordance name and instruction. */
function asAffordanceRow(example: Example): Example {
  const box = example.box as number[];
  const affordance = / (square|plus)\?/.exec(String(example.prompt))?.[1] ?? '';
  const blindBox = typeof example.blindAnswer === 'string' ? (JSON.parse(example.blindAnswer) as number[]) : null;
  return {
    ...example,
    prompt: `${String(example.prompt)}${INSTRUCTION}`,
    answer: objectJson(box, affordance),
    affordanceName: affordance,
    blindAnswer: blindBox ? objectJson(blindBox, affordance) : null,
  };
}

/** Affordance-R1's five rewards over a row's `answer` (the solution JSON) and `affordanceName`. */
export function affordanceR1Rewards(vectors: WordVectors = toyWordVectors): NamedReward[] {
  return [
    { name: 'format', reward: ({ completion }) => affordanceR1Format(completion), weight: 1 },
    {
      name: 'accuracy',
      reward: ({ completion, row }) => affordanceR1Accuracy(completion, String(row.answer)),
      weight: 1,
    },
    { name: 'non-repeat', reward: ({ completion }) => affordanceR1NonRepeat(completion), weight: 1 },
    {
      name: 'affordance',
      reward: ({ completion, row }) => affordanceR1Name(completion, String(row.affordanceName), vectors),
      weight: 1,
    },
    {
      name: 'box-count',
      reward: ({ completion, row }) => affordanceR1BoxCount(completion, String(row.answer)),
      weight: 1,
    },
  ];
}

const locating = shapeLocatingTask({ imageSize: 16, cellSize: 8, answer: 'box', teacherShapeBlindRate: 0.7 });

export const affordanceR1Task: Task = {
  ...locating,
  name: 'affordance-r1-locating',
  description: 'shape-locating as Affordance-R1: think, rethink, then a JSON box, point and affordance name',
  alphabet: [
    ...new Set(`${locating.alphabet}${INSTRUCTION}0123456789[]{}":,.<>/ bbox_2d point_2d affordance square plus ok`),
  ].join(''),
  trainExamples: (count, seed) => locating.trainExamples(count, seed).map(asAffordanceRow),
  evalExamples: (count, seed) => locating.evalExamples(count, seed).map(asAffordanceRow),
  demonstration: (example, draw) => {
    // shape-locating's teacher: the distractor's box on a share of the problems that have one.
    const answer = locating.demonstration(example, draw);
    const name = String(example.affordanceName);
    return `<think>${name}</think><rethink>ok</rethink><answer>${answer}</answer>`;
  },
  rewards: () => affordanceR1Rewards(),
  isCorrect: (example, completion) => affordanceR1Accuracy(completion, String(example.answer)) === 3,
};

export default {
  config: {
    model: {
      hiddenSize: 64,
      numLayers: 2,
      numHeads: 4,
      vision: { imageSize: 16, patchSize: 8, scaleFactor: 2, hiddenSize: 32, numLayers: 1, numHeads: 2 },
    },
    sft: { steps: 1000, batchSize: 32, learningRate: 1e-2, warmupSteps: 20, schedule: 'cosine' },
    sampling: { groupSize: 8, maxNewTokens: 144, temperature: 1 }, // rollout.n 8, temperature 1.0
    grpo: { steps: 100, promptsPerStep: 16, microBatchSize: 64, learningRate: 1e-3 },
    algorithm: {
      advantage: 'grpo',
      loss: 'ppo-clip',
      aggregation: 'token-mean',
      klCoefficient: 5e-3,
      klEstimator: 'k3',
    },
    evaluation: { examples: 200, every: 25 },
    checkpoint: { every: 0 },
    logging: { printEvery: 10, samplesEvery: 10, samplesPerStep: 2 },
  },
  task: affordanceR1Task,
  rewards: affordanceR1Task.rewards(),
} satisfies Recipe;
