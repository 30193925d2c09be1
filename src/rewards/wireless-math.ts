/**
 * WirelessMathLM's binary verification reward (#221, Li et al. 2025, arXiv 2509.23219) for questions
 * in the WirelessMathBench-XL format: a multiple-choice question (the row's `type` is
 * `multiple_choice`, the answer a letter) or an equation with `[MASK]` blanks (`fill_blank`: some
 * terms masked, progressive fill-in-the-blank; `full_equation`: the whole right-hand side masked),
 * whose answers are the blanks' expressions in order.
 *
 * Score: 1 when the answer verifies, else 0, as the paper's "binary verification rewards" (no partial
 * credit, no format bonus). A letter is the last `\boxed{B}`, else read as `multipleChoice` reads it
 * ("Answer: B", `<answer>B</answer>`); blanks are the completion's last k `\boxed{…}` (k = the number of blanks),
 * each compared with its gold expression symbolically (`answersMatch`: `\gamma+1` equals `1+\gamma`),
 * and every blank must match.
 *
 * Where it comes from: the format (fields `type`, `equation` with `[MASK]`, `options` A–D,
 * `correct_answer`) is the public dataset card of WirelessMATHBench-XL; "binary verification reward"
 * and the three question kinds are the paper's abstract and OpenReview summary. The paper's reward
 * section could not be read here, so the answer extraction (`\boxed{}` per blank) is this repository's.
 *
 * Is not: the benchmark's data (4,027 problems from papers, not shipped here); see the `wireless-math` task.
 */
import { answersMatch } from './math/verify.js';
import { extractChoice } from './format.js';
import type { RewardFn } from './types.js';

export interface WirelessMathOptions {
  /** Column with the gold letter (multiple choice) or the gold blanks joined by ` ;; ` (default `answer`). */
  answerColumn?: string;
  /** Column with the question kind: `multiple_choice`, `fill_blank` or `full_equation` (default `type`). */
  typeColumn?: string;
}

/** Separates the gold expressions of several blanks in the answer column. */
export const BLANK_SEPARATOR = ' ;; ';

/** The contents of every top-level `\boxed{…}` in order (braces balanced, so `\boxed{\frac{a}{b}}` is whole). */
export function boxedContents(text: string): string[] {
  const found: string[] = [];
  for (let at = text.indexOf('\\boxed{'); at >= 0; at = text.indexOf('\\boxed{', at + 1)) {
    let depth = 0;
    for (let i = at + '\\boxed'.length; i < text.length; i++) {
      if (text[i] === '{') depth++;
      else if (text[i] === '}' && --depth === 0) {
        found.push(text.slice(at + '\\boxed{'.length, i));
        at = i;
        break;
      }
    }
  }
  return found;
}

/**
 * 1 when a multiple-choice letter or every `[MASK]` blank verifies, else 0.
 * @example wirelessMath()(makeRewardInput({ completion: '\\boxed{\\gamma+1}', row: { type: 'fill_blank', answer: '1+\\gamma' } })) // 1
 */
export function wirelessMath({ answerColumn = 'answer', typeColumn = 'type' }: WirelessMathOptions = {}): RewardFn {
  return ({ completion, row }) => {
    const kind = row[typeColumn];
    const gold = row[answerColumn];
    if (typeof gold !== 'string' || gold === '')
      throw new Error(`wireless-math: the row has no "${answerColumn}" column with the gold answer`);
    if (kind === 'multiple_choice') {
      // The last box when there is one (a model that boxes twice answers with its last), else the letter in words.
      const last = boxedContents(completion).at(-1);
      const letter = last === undefined ? extractChoice(completion, 'ABCD') : extractChoice(`\\boxed{${last}}`, 'ABCD');
      return letter === gold.trim().toUpperCase() ? 1 : 0;
    }
    if (kind !== 'fill_blank' && kind !== 'full_equation')
      throw new Error(
        `wireless-math: column "${typeColumn}" is ${JSON.stringify(kind)}, not multiple_choice, fill_blank or full_equation`,
      );
    const blanks = gold.split(BLANK_SEPARATOR);
    const boxed = boxedContents(completion);
    if (boxed.length < blanks.length) return 0;
    const answers = boxed.slice(boxed.length - blanks.length);
    return blanks.every((blank, i) => answers[i]!.trim() !== '' && answersMatch(answers[i]!, blank)) ? 1 : 0;
  };
}
