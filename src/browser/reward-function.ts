/**
 * A reward typed into the page: the text compiled to a JavaScript function and run over a step's
 * completions, each problem stopped with one sentence — a text that does not compile or is not a
 * function, a call that throws, or a value that is not a number (null and NaN mean "does not apply",
 * as for any reward: docs/rewards.md).
 *
 * Is not: the time limit (a call that never returns cannot be stopped from its own thread:
 * typed-reward.ts, in the training worker, ends the reward's worker instead) nor the worker itself
 * (reward-worker.ts), nor a type checker: TypeScript's annotations are stripped (sucrase, as `tsx`
 * and Jest's transforms do) without checking them, so the box takes TypeScript or JavaScript.
 */
import { transform } from 'sucrase';

/** What a typed reward receives per completion: the fields of a RewardInput that cross a worker boundary. */
export interface TypedRewardInput {
  prompt: string;
  completion: string;
  row: Record<string, unknown>;
  group: string[];
  indexInGroup: number;
  step: number;
  truncated: boolean;
}

type TypedRewardFunction = (input: TypedRewardInput) => unknown;

const EXAMPLE = '({ completion }) => (/\\bdog\\b/i.test(completion) ? 1 : 0)';

/** Compiles the reward box's text, which must be one function expression (an arrow or `function`). */
export function compileReward(source: string): TypedRewardFunction {
  if (source.trim() === '') throw new Error(`the reward box is empty: write a function such as ${EXAMPLE}`);
  let value: unknown;
  try {
    value = expressionValue(source);
  } catch (asJavaScript) {
    // Not JavaScript: TypeScript's types stripped, then the same. Each parser's own message, since
    // which language the text meant to be is not known (sucrase's places are coarse; V8's has none).
    let javascript: string;
    try {
      javascript = transform(source, { transforms: ['typescript'], disableESTransforms: true }).code;
    } catch (asTypeScript) {
      throw new Error(
        `the reward does not compile as JavaScript (${(asJavaScript as Error).message}) nor as TypeScript (${(asTypeScript as Error).message})`,
      );
    }
    try {
      value = expressionValue(javascript.trim().replace(/;$/, ''));
    } catch (error) {
      throw new Error(`the reward does not compile: ${(error as Error).message}`);
    }
  }
  if (typeof value !== 'function')
    throw new Error(`the reward box must hold a function such as ${EXAMPLE}, not a ${typeof value}`);
  return value as TypedRewardFunction;
}

/**
 * The value of `text` as one expression: it is put in parentheses, so `function f() {}` and arrows both
 * compile, and a statement list is refused by the parser rather than run.
 */
function expressionValue(text: string): unknown {
  return new Function(`"use strict";\nreturn (\n${text}\n);`)();
}

const shown = (text: string) => JSON.stringify(text.length > 40 ? `${text.slice(0, 40)}…` : text);

/** Scores each input in order; throws one sentence at the first call that throws or returns a non-number. */
export async function scoreCompletions(
  reward: TypedRewardFunction,
  inputs: readonly TypedRewardInput[],
): Promise<(number | null)[]> {
  const scores: (number | null)[] = [];
  for (const [index, input] of inputs.entries()) {
    const which = `completion ${index + 1} of ${inputs.length} (${shown(input.completion)})`;
    let value: unknown;
    try {
      value = await reward(input);
    } catch (error) {
      throw new Error(`the reward threw on ${which}: ${error instanceof Error ? error.message : String(error)}`);
    }
    if (value === null || value === undefined || Number.isNaN(value)) scores.push(null);
    else if (typeof value === 'number' && Number.isFinite(value)) scores.push(value);
    else
      throw new Error(
        `the reward returned ${typeof value === 'number' ? String(value) : `a ${typeof value}`} for ${which}; it must return a finite number (or null to leave the completion out)`,
      );
  }
  return scores;
}
