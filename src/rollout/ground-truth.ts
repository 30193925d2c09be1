/**
 * Ground-truth injection (`grpo.groundTruthCompletion`): every group's last sample is replaced by the
 * row's ground-truth completion, so a group whose samples all miss still holds one right answer to
 * learn from and its baseline is anchored by it — TempSamp-R1's mixed-policy GRPO (Li et al. 2025,
 * arXiv 2509.18056, #209). Follows `RayPPOTrainer._inject_gt_rollout_in_gen_output` of the
 * open-source TempSamp-R1 (ZhangZikun6666/TempSamp-R1, verl/trainer/ray_trainer.py): the text is
 * tokenized without special tokens, the stop token appended, the slot `n − 1` of each group
 * replaced, and π_old of the replaced row recomputed by the policy before the update (their
 * `compute_log_probs` of the actor; vLLM's logprobs belong to the sample it replaced). The row then
 * joins its group's mean and standard deviation like any sample, and the loss treats it like one.
 *
 * Is: a RolloutFn around another, and the template that spells the text. Is not: the log-prob
 * forward (the trainer passes it in) or the rewards; the shaping of TempSamp-R1's reward is the
 * `temporal-iou` reward's option (rewards/temporal-grounding.ts).
 */
import type { Example } from '../data/task.js';
import type { TextTokenizer } from '../model/tokenizer.js';
import type { RolloutContext, RolloutFn, RolloutPrompt, RolloutSample } from './rollout.js';

const placeholder = /\{([A-Za-z0-9_]+)\}/g;

/**
 * The ground-truth completion of a row: `template` with each `{column}` replaced by the row's cell
 * (a string or a number); a missing or other cell is an error naming the column and `where`.
 */
export function groundTruthText(template: string, row: Example, where: string): string {
  return template.replace(placeholder, (_, column: string) => {
    const cell = row[column];
    if (typeof cell === 'string' || typeof cell === 'number') return String(cell);
    throw new Error(
      `grpo.groundTruthCompletion: ${where} has no text or number in column "${column}" (the template reads {${column}})`,
    );
  });
}

/** The token ids of a row's ground-truth completion: the text's ids, then the first stop id (theirs: EOS). */
export function groundTruthIds(
  tokenizer: TextTokenizer,
  template: string,
  row: Example,
  stopTokenIds: readonly number[],
  where: string,
): number[] {
  const ids = tokenizer.encode(groundTruthText(template, row, where), { addSpecialTokens: false });
  return stopTokenIds.length > 0 && ids[ids.length - 1] !== stopTokenIds[0] ? [...ids, stopTokenIds[0]] : ids;
}

/**
 * Before any compute: one `- grpo.groundTruthCompletion: …` line per row (of those a run draws
 * first) whose ground truth cannot be written, or, given the tokenizer, is longer than `maxNewTokens`.
 */
export function groundTruthProblems(
  template: string,
  rows: readonly Example[],
  maxNewTokens: number,
  tokens?: { tokenizer: TextTokenizer; stopTokenIds: readonly number[] },
): string[] {
  return rows.flatMap((row, i) => {
    const where = `training row ${i}`;
    try {
      groundTruthText(template, row, where);
    } catch (error) {
      return [`- ${(error as Error).message}`];
    }
    if (!tokens) return [];
    const length = groundTruthIds(tokens.tokenizer, template, row, tokens.stopTokenIds, where).length;
    return length > maxNewTokens
      ? [
          `- grpo.groundTruthCompletion: the ground truth of ${where} is ${length} tokens, over sampling.maxNewTokens (${maxNewTokens})`,
        ]
      : [];
  });
}

/** log π_old of each row's completion after its prompt under the context's model, at `temperature`, without gradient. */
export type FrozenLogprobs = (
  context: RolloutContext,
  rows: { promptIds: number[]; completionIds: number[]; images?: RolloutPrompt['images'] }[],
  temperature: number,
) => ArrayLike<number>[];

/**
 * `inner`, with the last sample of every group of two or more replaced by the row's ground truth
 * (a group of one keeps its own sample: nothing would be left to compare it with).
 */
export function groundTruthRollout(inner: RolloutFn, template: string, logprobs: FrozenLogprobs): RolloutFn {
  const rollout: RolloutFn = async (context, prompts, settings) => {
    const samples = await inner(context, prompts, settings);
    const G = settings.groupSize;
    if (G < 2) return samples;
    const rows = prompts.map((prompt, p) => {
      const where = `training row ${prompt.exampleIndex ?? p}`;
      const completionIds = groundTruthIds(context.tokenizer, template, prompt.example, settings.stopTokenIds, where);
      if (completionIds.length > settings.maxNewTokens)
        throw new Error(
          `grpo.groundTruthCompletion: the ground truth of ${where} is ${completionIds.length} tokens, over sampling.maxNewTokens (${settings.maxNewTokens})`,
        );
      return { promptIds: prompt.promptIds, completionIds, images: prompt.images };
    });
    const old = logprobs(context, rows, settings.temperature);
    return samples.map((sample, i): RolloutSample => {
      const p = Math.floor(i / G);
      if (i % G !== G - 1) return sample;
      const { completionIds } = rows[p];
      return {
        promptIndex: sample.promptIndex,
        completionIds,
        oldLogprobs: Array.from(old[p]),
        lossMask: completionIds.map(() => 1),
        text: context.tokenizer.decode(completionIds, { skipSpecialTokens: true }),
        truncated: false,
        groundTruth: true,
      };
    });
  };
  rollout.provides = inner.provides;
  return rollout;
}
