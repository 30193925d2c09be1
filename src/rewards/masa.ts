/**
 * `masa`: MASA's self-alignment reward (Kim, Jang & Yang 2025, "Meta-Awareness Enhances Reasoning
 * Models: Self-Alignment Reinforcement Learning", arXiv 2510.03259, papers.tsv 253), exact to the
 * authors' released trainer (akatigre/MASA-RL: `verl/workers/reward_manager/masa_naive.py`,
 * `verl/utils/reward_score/meta_cog.py` `compute_score`, `verl/utils/reward_score/utils.py`
 * `extract_last_json_object`). Each problem is rolled out twice in the same step: a solution group,
 * scored by the correctness check, and a meta group, whose prompt asks the policy to predict, before
 * solving, the notions a solution needs, how many of 8 tries will pass and how long a solution is.
 * A meta completion scores how well its prediction matches the solution group's actual rollouts:
 *
 *   r_meta = (notion + passRate + length) / 3
 *   notion   = the share of predicted notions (singularized, not already in the meta prompt) that
 *              appear in more right solutions than wrong ones (substring counts)
 *   passRate = 0.01^|mean solution score − pass_rate/8|
 *   length   = 1 when min < solution_length < max over the right solutions' token lengths, else 0
 *
 * A term whose prediction is missing or not an integer (pass_rate, solution_length) scores 0. Both
 * groups are trained by GRPO, each normalised on its own (the authors give the meta group its own uid).
 *
 * The pairing: rows sharing `pairColumn` are one problem; the row whose `roleColumn` is "meta" holds
 * the meta prompt, the others the problem. Both must be in the same step: `grpo.drawTogether` on
 * the same column guarantees it. A meta group whose solutions are not in the step is left unscored
 * (`null`); the authors' code never meets that case.
 *
 * Is not: the meta prompt (the data carries it; recipes/papers/masa.ts writes the authors' text),
 * nor the paper's other parts the released code leaves out or switches off by default: feeding the
 * meta prediction into the solution prompt (`meta_feedin`), the meta SFT on expert meta-trajectories
 * (`meta_sft`), and prediction-based gating and length cutoff. Where it differs: `problem` (what
 * notions must not copy) is the meta row's prompt text, where theirs is the decoded chat-templated
 * prompt; response lengths are the completions' token counts, as theirs.
 */
import { z } from 'zod';
import { define, optionColumn, type RewardFactory } from './factory-registry.js';
import {
  namedReward,
  perCompletionColumns,
  perCompletionReward,
  type ColumnsOfReward,
  type CreateReward,
} from './named-reward.js';
import { promptText, type BatchReward, type RewardFn, type RewardInput, type RewardValue } from './types.js';

/** What the meta prediction's terms are scored against: the problem's solution rollouts in the step. */
export interface MasaSolutionStats {
  /** The meta prompt's text: a predicted notion found in it does not count. */
  problem: string;
  responses: readonly string[];
  /** Each solution's correctness score (1 right, 0 wrong; other values count only in the mean). */
  scores: readonly number[];
  /** Each solution's length in tokens. */
  lengths: readonly number[];
}

/** The three terms and their mean, as the authors' `compute_score` returns them. */
export interface MasaMetaScore {
  score: number;
  notion: number;
  passRate: number;
  length: number;
}

/** Python's str.strip(chars) for a set of single characters. */
function stripCharacters(text: string, characters: string): string {
  let start = 0;
  let end = text.length;
  while (start < end && characters.includes(text[start]!)) start++;
  while (end > start && characters.includes(text[end - 1]!)) end--;
  return text.slice(start, end);
}

/** Python's isinstance(value, int) for a JSON value: a whole-number literal, or a boolean (bool is int). */
function jsonInteger(json: string, key: string, value: unknown): number | null {
  if (typeof value === 'boolean') return Number(value);
  if (typeof value !== 'number' || !Number.isInteger(value)) return null;
  // JSON.parse reads 8.0 and 1e1 as whole numbers where json.loads gives floats: check the literal.
  return new RegExp(`"${key}"\\s*:\\s*-?\\d+\\s*[,}]`).test(json) ? value : null;
}

/** The prediction: the keys the score reads, integers as Python's json would type them. */
export type MasaPrediction = { math_notion?: unknown; pass_rate?: number | null; solution_length?: number | null };

/**
 * The authors' `extract_last_json_object`: the last `{"math_notion": …}` object without nested
 * braces, parsed as JSON; failing that, `math_notion: [...]` and `solution_length: NN` read by
 * pattern (the latter two digits, outside its 1024–16384 bound, so always null, as theirs).
 */
export function extractMasaPrediction(text: string): MasaPrediction {
  const candidates = [...text.matchAll(/(\{["']math_notion["']:[^}]*\})/g)].map((match) => match[1]!);
  const last = candidates[candidates.length - 1];
  if (last !== undefined) {
    try {
      const parsed = JSON.parse(last) as Record<string, unknown>;
      const prediction: MasaPrediction = {};
      if ('math_notion' in parsed) prediction.math_notion = parsed.math_notion;
      if ('pass_rate' in parsed) prediction.pass_rate = jsonInteger(last, 'pass_rate', parsed.pass_rate);
      if ('solution_length' in parsed)
        prediction.solution_length = jsonInteger(last, 'solution_length', parsed.solution_length);
      return prediction;
    } catch {
      // not JSON: the pattern fallback below, as theirs
    }
  }
  const prediction: MasaPrediction = {};
  const notions = /math_notion\s*:\s*(\[[^\]]*\])/.exec(text);
  if (notions) {
    let list: unknown[];
    try {
      list = JSON.parse(notions[1]!) as unknown[];
    } catch {
      list = stripCharacters(notions[1]!, '[]')
        .split(',')
        .filter((item) => item.trim())
        .map((item) => stripCharacters(stripCharacters(item.trim(), '"'), "'"));
    }
    prediction.math_notion = list.length ? list : null;
  }
  if (/solution_length\s*:\s*(\d{1,2})/.test(text)) prediction.solution_length = null;
  return prediction;
}

/** The authors' regular-plural singularizer (identities → identity, cosines → cosine). */
function singularize(word: string): string {
  const lower = word.toLowerCase();
  if (lower.endsWith('ies') && lower !== 'series') return `${word.slice(0, -3)}y`;
  if (['ches', 'shes', 'xes', 'zes', 'oes'].some((ending) => lower.endsWith(ending))) return word.slice(0, -2);
  if (lower.endsWith('s') && !lower.endsWith('ss') && lower !== 'series') return word.slice(0, -1);
  return word;
}

/** The notion term; 0 where the authors' code would raise (a non-string notion, a list holding ","). */
function notionScore(predicted: unknown, stats: MasaSolutionStats): number {
  let notions: unknown[];
  if (typeof predicted === 'string' && predicted.includes(','))
    notions = predicted.split(',').map((notion) => stripCharacters(stripCharacters(notion.trim(), '['), ']'));
  else if (Array.isArray(predicted)) {
    if (predicted.includes(',')) return 0; // `"," in list` is true, then list.split raises
    notions = predicted;
  } else if (typeof predicted === 'string') notions = [predicted];
  else return 0; // None, numbers, objects: `"," in x` or singularize raises
  if (!notions.every((notion): notion is string => typeof notion === 'string')) return 0;
  const kept = notions.map(singularize).filter((notion) => !stats.problem.includes(notion));
  const counts = new Map<string, number>(kept.map((notion) => [notion, 0]));
  stats.responses.forEach((response, index) => {
    const sign = stats.scores[index] === 1 ? 1 : stats.scores[index] === 0 ? -1 : 0;
    if (sign !== 0)
      for (const notion of kept) if (response.includes(notion)) counts.set(notion, counts.get(notion)! + sign);
  });
  return counts.size ? [...counts.values()].filter((count) => count > 0).length / counts.size : 0;
}

/** The authors' `compute_score` for one meta prediction against its problem's solution rollouts. */
export function masaMetaScore(prediction: MasaPrediction, stats: MasaSolutionStats, passRateScale = 8): MasaMetaScore {
  const notion = 'math_notion' in prediction ? notionScore(prediction.math_notion, stats) : 0;
  let length = 0;
  if (typeof prediction.solution_length === 'number') {
    const rightLengths = stats.lengths.filter((_, index) => stats.scores[index] === 1);
    const predicted = prediction.solution_length;
    length =
      rightLengths.length && Math.max(...rightLengths) > predicted && predicted > Math.min(...rightLengths) ? 1 : 0;
  }
  let passRate = 0;
  if (typeof prediction.pass_rate === 'number' && stats.scores.length) {
    const mean = stats.scores.reduce((sum, score) => sum + score, 0) / stats.scores.length;
    passRate = 0.01 ** Math.abs(mean - prediction.pass_rate / passRateScale);
  }
  return { score: (notion + passRate + length) / 3, notion, passRate, length };
}

/** Options of {@link masaReward}. */
export interface MasaOptions {
  /** Scores the solution completions (their reward, and the stats the meta score reads); null counts as 0. */
  correctness: RewardFn;
  /** The column a problem's solution row and meta row share (default `pair_id`). */
  pairColumn?: string;
  /** The column that is "meta" on the meta row (default `masa_role`). */
  roleColumn?: string;
  /** pass_rate is out of this many tries (default 8, the authors' prompt and code). */
  passRateScale?: number;
}

/**
 * The step's rewards: a solution completion scores its correctness, a meta completion its
 * {@link masaMetaScore} against the solution completions of its problem in the step.
 * @example masaReward({ correctness: mathAnswer() })
 */
export function masaReward({
  correctness,
  pairColumn = 'pair_id',
  roleColumn = 'masa_role',
  passRateScale = 8,
}: MasaOptions): BatchReward {
  if (!(passRateScale > 0)) throw new Error(`reward "masa": passRateScale must be > 0, got ${passRateScale}`);
  return {
    scope: 'batch',
    async scoreBatch(inputs: readonly RewardInput[], signal?: AbortSignal): Promise<RewardValue[]> {
      const keyOf = (input: RewardInput) => {
        const value = input.row[pairColumn];
        if (value === undefined || value === null || value === '')
          throw new Error(`reward "masa": a row has no "${pairColumn}" column (options.pairColumn names the pairing)`);
        return String(value);
      };
      const isMeta = (input: RewardInput) => input.row[roleColumn] === 'meta';
      const scores: RewardValue[] = await Promise.all(
        inputs.map(async (input) => (isMeta(input) ? null : ((await correctness({ ...input, signal })) ?? 0))),
      );
      const solutions = new Map<string, { responses: string[]; scores: number[]; lengths: number[] }>();
      inputs.forEach((input, index) => {
        if (isMeta(input)) return;
        const stats = solutions.get(keyOf(input)) ?? { responses: [], scores: [], lengths: [] };
        stats.responses.push(input.completion);
        stats.scores.push(scores[index]!);
        stats.lengths.push(input.completionIds.length);
        solutions.set(keyOf(input), stats);
      });
      return inputs.map((input, index) => {
        if (!isMeta(input)) return scores[index]!;
        const stats = solutions.get(keyOf(input));
        if (!stats) return null;
        const prediction = extractMasaPrediction(input.completion);
        return masaMetaScore(prediction, { ...stats, problem: promptText(input.prompt) }, passRateScale).score;
      });
    },
  };
}

/** The registry entry; `correctness` by name is built with `createReward` (default: the run's task check), its columns are `columnsOfReward`'s. */
export function masaFactory(createReward: CreateReward, columnsOfReward: ColumnsOfReward): RewardFactory {
  const name = 'masa';
  const column = z.string().min(1);
  return define(
    name,
    'step: solution rows score their correctness; meta rows (roleColumn "meta") score (notion + 0.01^|pass rate error| + length-in-range)/3 against their problem\'s solutions in the step (rows sharing pairColumn; draw them together with grpo.drawTogether)',
    'MASA, Kim et al. 2025, arXiv 2510.03259 (akatigre/MASA-RL meta_cog.py compute_score, masa_naive.py); papers.tsv 253',
    z
      .object({
        correctness: namedReward.optional(),
        pairColumn: column.optional(),
        roleColumn: column.optional(),
        passRateScale: z.number().positive().finite().optional(),
      })
      .strict(),
    ({ correctness, ...rest }, context) =>
      masaReward({
        correctness: perCompletionReward(createReward, name, 'correctness', correctness, context),
        ...rest,
      }),
    // The role column may be absent (a row without it is a solution row); the pairing may not.
    (options, context) => [
      optionColumn(options, 'pairColumn', 'pair_id'),
      ...perCompletionColumns(columnsOfReward, 'correctness', options.correctness, context),
    ],
  );
}
