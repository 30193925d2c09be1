/**
 * Length and repetition shaping: DAPO soft overlong punishment, length budgets (fixed or decaying
 * by step), the open-r1 n-gram repetition penalty, and ternary truthfulness (correct / abstain /
 * wrong). Group-level length shaping among correct peers lives in `group.ts`.
 *
 * Lengths count tokens (`completionIds`) by default; `unit: 'characters'` counts characters,
 * for callers without ids (the CLI).
 */
import { verifyMathAnswer } from './math.js';
import { stringColumn, type RewardFn, type RewardInput } from './types.js';

/** How lengths are counted. */
export type LengthUnit = 'tokens' | 'characters';

/** The completion length in the chosen unit; errors when tokens are asked for but absent. */
export function completionLength(
  input: Pick<RewardInput, 'completion' | 'completionIds'>,
  unit: LengthUnit,
  rewardName: string,
): number {
  if (unit === 'characters') return input.completion.length;
  if (input.completionIds.length === 0 && input.completion.length > 0) {
    throw new Error(`${rewardName}: no completion token ids to count; pass unit: 'characters' when only text is known`);
  }
  return input.completionIds.length;
}

/** The DAPO soft overlong punishment of one length (ALGORITHMS.md §5.4). */
export function overlongPenalty(length: number, maxLength: number, cacheLength: number): number {
  const softStart = maxLength - cacheLength;
  if (length <= softStart) return 0;
  if (length <= maxLength) return (softStart - length) / cacheLength;
  return -1;
}

/**
 * DAPO soft overlong punishment: 0 up to L_max − L_cache, then a linear ramp to −1 at L_max, −1
 * beyond. Add it to the task reward with weight 1. ALGORITHMS.md §5.4 (DAPO Eq. 13).
 * @example softOverlongPunishment({ maxLength: 10, cacheLength: 4 }) // 8 tokens → −0.5
 */
export function softOverlongPunishment({
  maxLength = 20480,
  cacheLength = 4096,
  unit = 'tokens' as LengthUnit,
} = {}): RewardFn {
  if (!(cacheLength > 0 && cacheLength <= maxLength))
    throw new Error(`softOverlongPunishment: need 0 < cacheLength ≤ maxLength, got ${cacheLength}, ${maxLength}`);
  return (input) => overlongPenalty(completionLength(input, unit, 'softOverlongPunishment'), maxLength, cacheLength);
}

/**
 * 1 when the completion fits the budget B(step), else 0 (Train-Long-Think-Short's 1[len ≤ B];
 * pass `annealedWeight(...)` from `combine.ts` as a budget that decays by step).
 * @example lengthBudget({ budget: 512 }) // 300 tokens → 1
 */
export function lengthBudget({
  budget,
  unit = 'tokens' as LengthUnit,
}: {
  budget: number | ((step: number) => number);
  unit?: LengthUnit;
}): RewardFn {
  return (input) => {
    const limit = typeof budget === 'function' ? budget(input.step) : budget;
    return completionLength(input, unit, 'lengthBudget') <= limit ? 1 : 0;
  };
}

/**
 * Train-Long-Think-Short's shrinking budget (Hammoud et al. 2025, arXiv 2508.08940, §3):
 * B(t) = max(1, B₀·γ^⌊t/T⌋) at GRPO step t (0-based), so the budget starts generous and tightens.
 * @example shrinkingBudget(256, 0.5, 10)(25) // 64
 */
export function shrinkingBudget(initial: number, factor: number, every: number): (step: number) => number {
  if (!(initial > 0)) throw new RangeError(`shrinkingBudget: the initial budget must be > 0, got ${initial}`);
  if (!(factor > 0 && factor <= 1))
    throw new RangeError(`shrinkingBudget: the decay factor must be in (0, 1], got ${factor}`);
  if (!(Number.isInteger(every) && every >= 1))
    throw new RangeError(`shrinkingBudget: the decay interval must be a positive integer, got ${every}`);
  return (step) => Math.max(1, initial * factor ** Math.floor(step / every));
}

/** The repetition penalty of a sequence: maxPenalty·(1 − distinct/total n-grams); 0 when it has no n-gram. */
export function repetitionScore(items: readonly (string | number)[], ngramSize: number, maxPenalty: number): number {
  const total = items.length - ngramSize + 1;
  if (total <= 0) return 0;
  const distinct = new Set<string>();
  for (let start = 0; start < total; start++) distinct.add(items.slice(start, start + ngramSize).join('\u0000'));
  return maxPenalty * (1 - distinct.size / total);
}

/**
 * open-r1 repetition penalty over word (or token-id) n-grams; negative, 0 for no repetition.
 * ALGORITHMS.md §5.5: "a b a b a b", n = 2, maxPenalty −1 → −0.6.
 * @example repetitionPenalty({ ngramSize: 2 })(makeRewardInput({ completion: 'a b a b a b' })) // −0.6
 */
export function repetitionPenalty({
  ngramSize = 3,
  maxPenalty = -1,
  unit = 'words' as 'words' | 'tokens',
} = {}): RewardFn {
  if (!(Number.isInteger(ngramSize) && ngramSize >= 1))
    throw new Error(`repetitionPenalty: ngramSize must be a positive integer, got ${ngramSize}`);
  if (maxPenalty > 0) throw new Error(`repetitionPenalty: maxPenalty must be ≤ 0, got ${maxPenalty}`);
  return ({ completion, completionIds }) => {
    const items = unit === 'tokens' ? completionIds : completion.toLowerCase().split(/\s+/).filter(Boolean);
    return repetitionScore(items, ngramSize, maxPenalty);
  };
}

const ABSTAIN =
  /\b(?:i don'?t know|i do not know|i'?m not sure|i am not sure|cannot (?:be )?determine|unknown|no answer)\b/i;

/** Options of {@link ternaryTruthfulness}. */
export interface TernaryOptions {
  answerColumn?: string;
  /** Decides correctness (default: math verification of the final answer). */
  isCorrect?: (completion: string, gold: string) => boolean;
  /** Matches an abstention (default: "I don't know", "not sure", "cannot determine", …). */
  abstain?: RegExp;
}

/**
 * TruthRL ternary reward: +1 correct, 0 abstain, −1 wrong (a hallucination). ALGORITHMS.md §5.3:
 * ["42", "I don't know", "41"] with gold 42 → [1, 0, −1].
 * @example ternaryTruthfulness()(makeRewardInput({ completion: "I don't know", row: { answer: '42' } })) // 0
 */
export function ternaryTruthfulness({
  answerColumn = 'answer',
  isCorrect = verifyMathAnswer,
  abstain = ABSTAIN,
}: TernaryOptions = {}): RewardFn {
  return ({ completion, row }) => {
    const gold = stringColumn(row, answerColumn, 'ternaryTruthfulness');
    if (isCorrect(completion, gold)) return 1;
    return abstain.test(completion) ? 0 : -1;
  };
}
