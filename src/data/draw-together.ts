/**
 * `grpo.drawTogether`: rows that share a column's value are drawn into the same step, all of them
 * (Co-Reward's question and its rephrasing, which label each other; `rewards/co-reward.ts`). A step
 * then draws promptsPerStep / k whole sets of k rows, distinct sets within a step while there are
 * enough.
 *
 * Is not: the uniform draw of every other run (grpo-step.ts `draw`), or any reward.
 */
import type { Example } from './task.js';

/** The seeded draw it needs (nn/ `Random`; data/ sits below nn/, so only its shape is named here). */
interface IntegerDraw {
  integer(n: number): number;
}

/**
 * The sets of training rows sharing `column`'s value, as indices into `examples` (the first
 * occurrence of each distinct prompt: the training list repeats rows). Throws naming
 * `grpo.drawTogether` for a row without the column or sets of unequal size, and
 * `grpo.promptsPerStep` when the set size does not divide it, before any rollout.
 */
function promptSets(examples: readonly Example[], column: string, promptsPerStep: number): number[][] {
  const byKey = new Map<string, { prompts: Set<string>; indices: number[] }>();
  examples.forEach((example, index) => {
    const value = example[column];
    if (value === undefined || value === null || value === '')
      throw new Error(`grpo.drawTogether: training row ${index} has no "${column}" column`);
    const key = String(value);
    const set = byKey.get(key) ?? { prompts: new Set<string>(), indices: [] };
    byKey.set(key, set);
    const prompt = JSON.stringify(example.prompt);
    if (set.prompts.has(prompt)) return;
    set.prompts.add(prompt);
    set.indices.push(index);
  });
  const sets = [...byKey.values()].map((set) => set.indices);
  const size = sets[0]?.length ?? 0;
  const uneven = [...byKey.entries()].find(([, set]) => set.indices.length !== size);
  if (uneven)
    throw new Error(
      `grpo.drawTogether: "${column}" = ${JSON.stringify(uneven[0])} has ${uneven[1].indices.length} distinct rows, others ${size}; every set must have the same size (a held-out split can part a pair: give held-out rows in their own file, --eval-data)`,
    );
  if (size < 2) throw new Error(`grpo.drawTogether: no two rows share a "${column}" value; nothing to draw together`);
  if (promptsPerStep % size !== 0)
    throw new Error(
      `grpo.promptsPerStep: ${promptsPerStep} is not a multiple of ${size}, the rows per "${column}" set (grpo.drawTogether)`,
    );
  return sets;
}

/**
 * The sets of `grpo.drawTogether` for a run, or null when it is null (unset); refused with a prompt
 * selector (which picks single rows). Called before any model loads (setup.ts) and again when the
 * step environment is built, on the same training list.
 */
export function drawTogetherSets(
  column: string | null,
  examples: readonly Example[],
  promptsPerStep: number,
  hasPromptSelector: boolean,
): number[][] | null {
  if (column === null) return null;
  if (hasPromptSelector)
    throw new Error(
      'grpo.drawTogether: cannot be combined with algorithm.promptSelector (the selector picks single rows)',
    );
  return promptSets(examples, column, promptsPerStep);
}

/** The example indices of one step: `count / k` sets, without replacement while there are enough sets. */
export function drawSets(sets: readonly number[][], count: number, random: IntegerDraw): number[] {
  const wanted = count / sets[0]!.length;
  const order = sets.map((_, index) => index);
  const chosen: number[] = [];
  // A partial Fisher–Yates shuffle; past the last set it starts a fresh pass (sets then repeat).
  for (let n = 0; n < wanted; n++) {
    const position = n % order.length;
    const pick = position + random.integer(order.length - position);
    [order[position], order[pick]] = [order[pick]!, order[position]!];
    chosen.push(order[position]!);
  }
  return chosen.flatMap((set) => sets[set]!);
}
