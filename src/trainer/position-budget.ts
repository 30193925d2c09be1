/**
 * The position check a run makes before any compute: every prompt the run will sample from (the
 * GRPO training prompts and the held-out evaluation prompts) plus `sampling.maxNewTokens`, and
 * `sft.packLength`, must fit in the model's max_position_embeddings. Positions past it are
 * extrapolation the model never saw; the sampler refuses them too, but only when it is reached,
 * which can be after the whole SFT phase.
 *
 * Is not: a check of SFT demonstrations (their length depends on the draw) or of the sampler's
 * other inputs (sampling/sampler.ts).
 */
import type { Example } from '../data/task.js';
import { renderPrompt } from './prompt-format.js';
import type { RunContext } from './setup.js';

/** The longest encoded prompt of `examples`, with its text for the error message. */
function longestPrompt(context: RunContext, examples: readonly Example[]): { length: number; prompt: string } {
  let longest = { length: 0, prompt: '' };
  for (const example of examples) {
    const { text, ids } = renderPrompt(context.promptFormat, example);
    if (ids.length > longest.length) longest = { length: ids.length, prompt: text };
  }
  return longest;
}

/** Throws naming the field when a run would go past the model's max_position_embeddings. */
export function checkPositionBudget(context: RunContext): void {
  const { config, task, model } = context;
  const positions = model.config.maxPositionEmbeddings;
  const source = config.model.checkpoint
    ? `the max_position_embeddings of ${config.model.checkpoint}/config.json`
    : 'the max_position_embeddings of a from-scratch model';
  const problems: string[] = [];
  if (config.sft.steps > 0 && config.sft.packLength > positions) {
    problems.push(`- sft.packLength: ${config.sft.packLength} is over ${source} (${positions})`);
  }
  // The same draws as trainer.ts: GRPO prompts with seed + 2, held-out prompts with seed + 1.
  const sets: Array<[string, Example[]]> = [
    ['held-out', task.evalExamples(config.evaluation.examples, config.seed + 1)],
  ];
  if (config.grpo.steps > 0) sets.unshift(['GRPO', task.trainExamples(config.grpo.examples, config.seed + 2)]);
  for (const [name, examples] of sets) {
    const { length, prompt } = longestPrompt(context, examples);
    if (length + config.sampling.maxNewTokens > positions) {
      problems.push(
        `- sampling.maxNewTokens: ${config.sampling.maxNewTokens} plus the longest ${name} prompt (${length} tokens, ${JSON.stringify(prompt.slice(0, 40))}) is ${length + config.sampling.maxNewTokens} positions, over ${source} (${positions})`,
      );
    }
  }
  if (problems.length > 0) throw new Error(`invalid config:\n${problems.join('\n')}`);
}
