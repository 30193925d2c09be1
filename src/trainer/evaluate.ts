/**
 * Held-out evaluation: pass@1 with greedy decoding, pass@k with k sampled completions, and the mean
 * task reward of the greedy answers. Used before and after GRPO and every `evaluation.every` steps.
 *
 * A multi-turn run (a rollout that provides 'turns') is evaluated through its own rollout at
 * temperature 0, so tools run and the check sees the episode's final answer, as in training.
 *
 * Is not: a benchmark harness; it scores one task's held-out split with the task's own check.
 */
import type { Example, Task } from '../data/task.js';
import type { Transformer } from '../model/transformer.js';
import { scoreRewards, weightedSum, weightsAt } from '../rewards/index.js';
import type { NamedReward } from '../rewards/types.js';
import { generate } from '../sampling/index.js';
import { renderPrompt, type PromptFormat } from './prompt-format.js';
import type { RolloutContext, RolloutFn } from './rollout.js';

export interface EvaluationSettings {
  maxNewTokens: number;
  stopTokenIds: number[];
  passAtK: number;
  temperature: number;
  seed: number;
  /** Evaluate whole episodes with this multi-turn rollout (greedy) instead of single completions. */
  episodes?: { rollout: RolloutFn; context: RolloutContext };
  /** Called once per greedy completion, in order (e.g. `grpo eval` saves them). */
  onCompletion?: (record: {
    prompt: string;
    completion: string;
    correct: boolean;
    reward: number | null;
    row: Example;
  }) => void;
}

export interface EvaluationResult {
  'eval/accuracy': number;
  'eval/meanReward': number;
  'eval/passAtK'?: number;
}

/** Scores `examples` with prompts formatted as in training (`format`: the chat template or plain text). */
export async function evaluate(
  model: Transformer,
  format: PromptFormat,
  task: Task,
  examples: readonly Example[],
  rewards: readonly NamedReward[],
  settings: EvaluationSettings,
): Promise<EvaluationResult> {
  const { tokenizer } = format;
  const prompts = examples.map((example) => renderPrompt(format, example).ids);
  const greedy = settings.episodes
    ? await greedyEpisodes(settings.episodes, format, examples, prompts, settings)
    : generate(model, {
        prompts,
        maxNewTokens: settings.maxNewTokens,
        temperature: 0,
        stopTokenIds: settings.stopTokenIds,
        seed: settings.seed,
      }).map((completion) => ({
        ...completion,
        text: tokenizer.decode(completion.ids, { skipSpecialTokens: true }),
        episode: undefined,
      }));
  const texts = greedy.map((completion) => completion.text);
  // One check at a time: a code task's check starts a sandbox process, and evaluation sets are hundreds long.
  let correct = 0;
  const verdicts: boolean[] = [];
  for (let i = 0; i < texts.length; i++) {
    verdicts.push(await task.isCorrect(examples[i], texts[i]));
    if (verdicts[i]) correct++;
  }
  const groups = texts.map((text, i) => [
    {
      prompt: examples[i].prompt,
      completion: text,
      completionIds: greedy[i].ids,
      row: examples[i],
      group: [text],
      indexInGroup: 0,
      step: 0,
      truncated: greedy[i].finishReason === 'length',
      episode: greedy[i].episode,
    },
  ]);
  const matrix = await scoreRewards(rewards, groups);
  const combined = weightedSum(matrix, weightsAt(rewards, 0));
  if (settings.onCompletion) {
    texts.forEach((completion, i) =>
      settings.onCompletion!({
        prompt: renderPrompt(format, examples[i]).text,
        completion,
        correct: verdicts[i],
        reward: Number.isFinite(combined.rewards[i]) ? combined.rewards[i] : null,
        row: examples[i],
      }),
    );
  }
  const finite = Array.from(combined.rewards).filter(Number.isFinite);
  const result: EvaluationResult = {
    'eval/accuracy': correct / examples.length,
    'eval/meanReward': finite.reduce((a, b) => a + b, 0) / Math.max(1, finite.length),
  };
  if (settings.passAtK > 0 && settings.episodes) {
    const sampled = await settings.episodes.rollout(
      settings.episodes.context,
      rolloutPrompts(format, examples, prompts),
      {
        ...episodeSettings(settings),
        groupSize: settings.passAtK,
        temperature: settings.temperature,
        seed: settings.seed + 1,
      },
    );
    const solved = new Set<number>();
    for (const sample of sampled) {
      if (await task.isCorrect(examples[sample.promptIndex], sample.text)) solved.add(sample.promptIndex);
    }
    result['eval/passAtK'] = solved.size / examples.length;
  } else if (settings.passAtK > 0) {
    const sampled = generate(model, {
      prompts,
      numSamples: settings.passAtK,
      maxNewTokens: settings.maxNewTokens,
      temperature: settings.temperature,
      stopTokenIds: settings.stopTokenIds,
      seed: settings.seed + 1,
    });
    const solved = new Set<number>();
    for (const completion of sampled) {
      if (
        await task.isCorrect(
          examples[completion.promptIndex],
          tokenizer.decode(completion.ids, { skipSpecialTokens: true }),
        )
      )
        solved.add(completion.promptIndex);
    }
    result['eval/passAtK'] = solved.size / examples.length;
  }
  return result;
}

function rolloutPrompts(format: PromptFormat, examples: readonly Example[], prompts: number[][]) {
  return examples.map((example, i) => ({ example, promptIds: prompts[i], text: renderPrompt(format, example).text }));
}

function episodeSettings(settings: EvaluationSettings) {
  return {
    groupSize: 1,
    maxNewTokens: settings.maxNewTokens,
    temperature: 0,
    topK: 0,
    topP: 1,
    minP: 0,
    stopTokenIds: settings.stopTokenIds,
    seed: settings.seed,
  };
}

/** One greedy episode per example through the run's multi-turn rollout (tools run as in training). */
async function greedyEpisodes(
  episodes: NonNullable<EvaluationSettings['episodes']>,
  format: PromptFormat,
  examples: readonly Example[],
  prompts: number[][],
  settings: EvaluationSettings,
) {
  const samples = await episodes.rollout(
    episodes.context,
    rolloutPrompts(format, examples, prompts),
    episodeSettings(settings),
  );
  return samples.map((sample) => ({
    ids: sample.completionIds,
    text: sample.text,
    finishReason: sample.truncated ? 'length' : 'stop',
    episode: sample.episode,
  }));
}
