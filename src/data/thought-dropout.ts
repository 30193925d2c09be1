/**
 * TON's thought dropout (Wang et al. 2025, "Think or Not? Selective Reasoning via Reinforcement Learning
 * for Vision-Language Models", arXiv 2505.16854, github.com/kokolerk/TON): during SFT, a demonstration's
 * reasoning is replaced, with probability p, by an empty thought, so the model learns both formats —
 * `<think>reasoning</think>answer` and `<think>\n\n</think>answer` — as the cold start for a GRPO stage
 * in which it chooses when to think.
 *
 * Is: the string transform of one demonstration. Is not: the SFT loop (trainer.ts applies it per drawn
 * demonstration) nor a reward for skipping thoughts (GRPO's task reward decides).
 */

/** The empty thought that replaces a dropped reasoning trace (TON's "\n\n"). */
export const emptyThought = '<think>\n\n</think>';

/**
 * The demonstration with its first `<think>…</think>` replaced by {@link emptyThought} when
 * `draw() < probability`; unchanged otherwise, and always when it has no think block (then `draw` is not called,
 * so a task without reasoning traces draws the same random numbers as with dropout off).
 * @example dropThought('<think>2 + 2 = 4</think>4', 1, Math.random) // '<think>\n\n</think>4'
 */
export function dropThought(demonstration: string, probability: number, draw: () => number): string {
  if (!(probability > 0)) return demonstration;
  const match = /<think>[\s\S]*?<\/think>/.exec(demonstration);
  if (!match) return demonstration;
  if (draw() >= probability) return demonstration;
  return demonstration.slice(0, match.index) + emptyThought + demonstration.slice(match.index + match[0].length);
}
