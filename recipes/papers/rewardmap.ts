/**
 * RewardMap (Feng et al. 2025, arXiv 2510.02240, papers #131), its route-planning part: GRPO on
 * "how do I get from station X to station Y?" over a metro map image, the answer one section per
 * line taken ("Route Name: …\nDeparture Stop: …\nArrival Stop: …", sections joined by "--"), rewarded
 * by the authors' difficulty-aware score: 10 for a valid route, plus 0.5 × the detail reward (partial
 * credit for the right end stations, line names and transfers, minus 5 per section past the
 * question's transfer count, capped at 10), times the difficulty weight (the city's 1.0 / 1.2 / 1.5,
 * + 0.5 for a question that needs a transfer). Run: `npx grpo train recipes/papers/rewardmap.ts`
 * (a from-scratch toy VLM: SFT for the answer format, then GRPO).
 *
 * From the authors' fscdc/RewardMap (read at 15428ac): verl/utils/reward_score/reason_map.py
 * (`clean_string`, `get_acc_planning`, `get_detailed_reward_planning`, `get_difficulty_weight`,
 * `reason_map_compute_score` with mode "difficulty_aware" and type "planning"), verl/workers/reward/
 * custom.py (the line table's station names without their "(Transfer Station)" marks);
 * scripts/reward_map.sh and reward_map.yaml: 4 rollouts, temperature 1, KL loss 1e-2 (low_var_kl = k3),
 * no KL in the reward; the advantage and loss are this library's GRPO defaults (token-mean), as their
 * verl fork's core_algos.py is not in the repository.
 * Differs: only route questions. Their multi-stage curriculum (rl_dataset.py: true/false questions, then
 * counting, then routes, in that order) is not here: those answers go through their `find_math_answer`
 * (latex2sympy), not ported. The maps are generated 16×16 images: a 4×4 grid of stations named by row
 * letter and column digit ("B3"), "Line 1" (red) along one row and "Line 2" (blue) down one column,
 * crossing at one transfer station, every city "easy"; the prompt is a short line instead of their
 * question text; an SFT teacher swaps the two line names on `TEACHER_MISTAKE_RATE` of its
 * demonstrations; the learning rates are the toy model's (theirs 1e-6 on Qwen2.5-VL-7B).
 */
import {
  generatedSplit,
  type Example,
  type NamedReward,
  type Pick,
  type Recipe,
  type RewardFn,
  type Task,
  type TaskImage,
} from '../../src/index.js';

/** A city's metro lines: line name → its stations in order. */
export type MetroData = Record<string, string[]>;

const TEACHER_MISTAKE_RATE = 0.5;
const ROWS = 'ABCD';

/** reason_map.py's `clean_string`, replacement by replacement (so "Univ." becomes "Universityersity" as theirs). */
export function cleanString(text: string): string {
  let s = text;
  for (const [from, to] of [
    ['Metro', ''], ['metro', ''], [',', ''], ['*', ''], ['\n', ''], ["'", ''], ['Univ.', 'University'], ['Univ', 'University'],
    ['Tech.', 'Technology'], ['Tech', 'Technology'], ['road', 'lu'], ['Road', 'lu'], ['Station', ''], ['station', ''],
    ['Asian Games Village', 'yayuncun'],
  ]) s = s.replaceAll(from, to); // prettier-ignore
  if (s.endsWith('站')) s = s.slice(0, -1);
  s = s.replace(/[(（][^)）]*[)）]/g, '');
  return s.replace(/[\s-]+/g, '').toLowerCase();
}

interface Section {
  routeName: string;
  departure: string;
  arrival: string;
}

/** The route sections of an answer: split on "--", each needing the three labels (`lowerCaseCheck`: the detail reward's case-insensitive test). */
function sections(answer: string, lowerCaseCheck: boolean): Section[] {
  return answer.split('--').flatMap((section) => {
    if (!section.trim()) return [];
    const checked = lowerCaseCheck ? section.toLowerCase() : section;
    const labels = lowerCaseCheck
      ? ['route name:', 'departure stop:', 'arrival stop:']
      : ['Route Name:', 'Departure Stop:', 'Arrival Stop:'];
    if (labels.some((label) => !checked.includes(label))) return [];
    const routeName = /Route Name: ([^\n]*?)\n/.exec(section)?.[1].trim() ?? 'Wrong';
    const departure = /Departure Stop: ([^\n]*?)\n/.exec(section);
    return [
      {
        routeName,
        departure: departure ? cleanString(departure[1]) : 'Wrong',
        arrival: cleanString(section.split('Arrival Stop:').at(-1)!.trim()),
      },
    ];
  });
}

/** The code's special line names ("八通" → Line 1, "大兴" → Line 4). */
const lineName = (name: string): string => (name.includes('八通') ? 'Line 1' : name.includes('大兴') ? 'Line 4' : name);

/** `get_acc_planning`: the route starts and ends right, every line exists with both its stops, transfers meet. */
export function routeIsValid(answer: string, metro: MetroData, station1: string, station2: string): boolean {
  const route = sections(answer, false);
  if (route.length === 0) return false;
  if (
    cleanString(route[0].departure) !== cleanString(station1) ||
    cleanString(route.at(-1)!.arrival) !== cleanString(station2)
  )
    return false;
  return route.every((section, i) => {
    const name = lineName(section.routeName);
    const stations = Object.hasOwn(metro, name) ? metro[name].map(cleanString) : undefined;
    if (!stations?.includes(cleanString(section.departure)) || !stations.includes(cleanString(section.arrival)))
      return false;
    return i === route.length - 1 || cleanString(section.arrival) === cleanString(route[i + 1].departure);
  });
}

/** `get_detailed_reward_planning`: partial credit for a route with the right end stations, capped at 10. */
export function routeDetailScore(
  answer: string,
  metro: MetroData,
  station1: string,
  station2: string,
  transfers: number,
): number {
  const route = sections(answer, true);
  if (route.length === 0) return 0;
  if (
    cleanString(route[0].departure) !== cleanString(station1) ||
    cleanString(route.at(-1)!.arrival) !== cleanString(station2)
  )
    return 0;
  let score = 2;
  route.forEach((section, i) => {
    if (i + 1 > transfers) score -= 5;
    const name = lineName(section.routeName);
    if (!Object.hasOwn(metro, name)) return;
    if (transfers === 0) {
      const [first, second] = [cleanString(station1), cleanString(station2)];
      const direct = Object.entries(metro).find(
        ([line, stations]) =>
          line === name && stations.map(cleanString).includes(first) && stations.map(cleanString).includes(second),
      );
      if (direct) score += 4;
    } else score += 3;
    const stations = metro[name].map(cleanString);
    if (
      stations.includes(cleanString(section.departure)) &&
      stations.includes(cleanString(section.arrival)) &&
      i < route.length - 1
    )
      if (cleanString(section.arrival) === cleanString(route[i + 1].departure) && i + 1 <= transfers) score += 1;
  });
  return Math.min(score, 10);
}

/** `get_difficulty_weight` for a route question: the city's weight, + 0.5 when the route needs a transfer. */
export function routeDifficultyWeight(city: string, transfers: number): number {
  const weights: Record<string, number> = { easy: 1, middle: 1.2, hard: 1.5 };
  if (!(city in weights)) throw new Error(`rewardmap: difficulty_city "${city}" is not easy, middle or hard`);
  return weights[city] + (transfers > 0 ? 0.5 : 0);
}

/** `reason_map_compute_score` for a route question, mode "difficulty_aware". */
export function rewardMapScore(answer: string, row: Readonly<Record<string, unknown>>): number {
  const metro = row.metro as MetroData;
  const [station1, station2] = [String(row.station_1), String(row.station_2)];
  const transfers = Number(row.question_transfer_count);
  const accuracy = routeIsValid(answer, metro, station1, station2) ? 10 : 0;
  const score = accuracy + 0.5 * routeDetailScore(answer, metro, station1, station2, transfers);
  return score * routeDifficultyWeight(String(row.difficulty_city), transfers);
}

/** The map: dark ground, Line 1 red along its row, Line 2 blue down its column, stations white. */
function drawMap(row: number, column: number): TaskImage {
  const data = new Uint8Array(16 * 16 * 3).fill(24);
  const paint = (x: number, y: number, colour: number[]) => data.set(colour, (y * 16 + x) * 3);
  for (let i = 0; i < 16; i++)
    for (const offset of [1, 2]) {
      paint(i, row * 4 + offset, [230, 40, 40]);
      paint(column * 4 + offset, i, [60, 90, 240]);
    }
  for (let i = 0; i < 4; i++)
    for (const [r, c] of [
      [row, i],
      [i, column],
    ])
      for (const [dx, dy] of [
        [1, 1],
        [2, 1],
        [1, 2],
        [2, 2],
      ])
        paint(c * 4 + dx, r * 4 + dy, [255, 255, 255]);
  return { width: 16, height: 16, channels: 3, data };
}

const section = (line: string, from: string, to: string) =>
  `Route Name: ${line}\nDeparture Stop: ${from}\nArrival Stop: ${to}\n`;
const PROMPT_TAIL = ' One Route Name:/Departure Stop:/Arrival Stop: section per line, joined by --.';

/** One route question on a random map: two distinct stations, the route through the transfer station when needed. */
function routeRow(pick: Pick): Example {
  const [row, column] = [pick(4), pick(4)];
  const name = (r: number, c: number) => `${ROWS[r]}${c + 1}`;
  const metro: MetroData = {
    'Line 1': [0, 1, 2, 3].map((c) => name(row, c)),
    'Line 2': [0, 1, 2, 3].map((r) => name(r, column)),
  };
  const all = [...new Set([...metro['Line 1'], ...metro['Line 2']])];
  const from = all[pick(all.length)];
  const others = all.filter((station) => station !== from);
  const to = others[pick(others.length)];
  const direct = Object.keys(metro).find((line) => metro[line].includes(from) && metro[line].includes(to));
  const transfer = name(row, column);
  const route = (lines: [string, string]) =>
    direct
      ? section(lines[direct === 'Line 1' ? 0 : 1], from, to)
      : [
          section(lines[metro['Line 1'].includes(from) ? 0 : 1], from, transfer),
          section(lines[metro['Line 1'].includes(from) ? 1 : 0], transfer, to),
        ].join('--');
  return {
    prompt: `Route from ${from} to ${to}?<image>${PROMPT_TAIL}`,
    answer: route(['Line 1', 'Line 2']).trim(),
    images: [drawMap(row, column)],
    metro,
    station_1: from,
    station_2: to,
    question_transfer_count: direct ? 0 : 1,
    difficulty_city: 'easy',
    swapped: route(['Line 2', 'Line 1']).trim(),
  };
}

const rows = (count: number, seed: number, heldOut: boolean) =>
  generatedSplit(
    'rewardmap-routes',
    count,
    seed,
    heldOut,
    routeRow,
    (row) => `${String(row.prompt)}|${JSON.stringify(row.metro)}`,
  );

const reasonMap: RewardFn = ({ completion, row }) => rewardMapScore(completion, row);

export const rewardMapTask: Task = {
  name: 'rewardmap-routes',
  description:
    'RewardMap route planning on generated metro maps: one Route Name/Departure Stop/Arrival Stop section per line',
  alphabet: [...new Set(`Route from to?${PROMPT_TAIL}${ROWS}1234 Line\n-`)].join(''),
  trainExamples: (count, seed) => rows(count, seed, false),
  evalExamples: (count, seed) => rows(count, seed, true),
  demonstration: (example, draw) => String(draw() < TEACHER_MISTAKE_RATE ? example.swapped : example.answer),
  rewards: (): NamedReward[] => [{ name: 'reasonmap', reward: reasonMap, weight: 1 }],
  isCorrect: (example, completion) =>
    routeIsValid(completion, example.metro as MetroData, String(example.station_1), String(example.station_2)),
};

export default {
  config: {
    model: {
      hiddenSize: 64,
      numLayers: 2,
      numHeads: 4,
      vision: { imageSize: 16, patchSize: 8, scaleFactor: 2, hiddenSize: 32, numLayers: 1, numHeads: 2 },
    },
    sft: { steps: 400, batchSize: 32, learningRate: 1e-2, warmupSteps: 20, schedule: 'cosine' },
    sampling: { groupSize: 4, maxNewTokens: 120, temperature: 1 }, // worker.rollout.n=4
    grpo: { steps: 100, promptsPerStep: 16, microBatchSize: 64, learningRate: 1e-3 },
    algorithm: {
      advantage: 'grpo',
      loss: 'ppo-clip',
      aggregation: 'token-mean',
      klCoefficient: 0.01,
      klEstimator: 'k3',
    },
    evaluation: { examples: 200, every: 25 },
    checkpoint: { every: 0 },
    logging: { printEvery: 10, samplesEvery: 10, samplesPerStep: 2 },
  },
  task: rewardMapTask,
  rewards: rewardMapTask.rewards(),
} satisfies Recipe;
