/**
 * Held-out evaluation: pass@1 with greedy decoding, pass@k with k sampled completions, and the mean
 * task reward of the greedy answers. Used before and after GRPO and every `evaluation.every` steps.
 *
 * Is not: a benchmark harness; it scores one task's held-out split with the task's own check.
 */
import type { Example, Task } from '../data/task.js';
import type { Transformer } from '../model/transformer.js';
import { weightedSum, weightsAt } from '../rewards/combine.js';
import { scoreRewards, type RewardScorer } from '../rewards/run.js';
import type { NamedReward, RewardEpisode, RewardInput } from '../rewards/types.js';
import { frozenLogprobsAfter } from './optimize.js';
import { generate } from '../sampling/index.js';
import type { PromptFormat } from '../config/prompt-format.js';
import type { RunContext } from './setup.js';
import { promptImageFeatures, type RolloutContext, type RolloutFn } from '../rollout/rollout.js';
import { renderRunPrompt, type RenderedPrompt, type VisionRun } from './vision-run.js';

export interface EvaluationSettings {
  maxNewTokens: number;
  stopTokenIds: number[];
  passAtK: number;
  temperature: number;
  seed: number;
  /** A vision-language run's model and processor: rows' images fill their prompts' image tokens. */
  vision?: VisionRun | null;
  /** Agent runs: answers come from whole episodes of this rollout (greedy for accuracy), not single completions. */
  episodes?: { rollout: RolloutFn; context: RolloutContext };
  /** Scores the completions with `rewards` (default: on this thread); a run passes its own (reward workers). */
  scoreRewards?: RewardScorer;
  /**
   * Told each distinct message of a correctness check that threw (a failing `llm-judge`, a crashed
   * sandbox); the answer counts as not correct and `eval/checkErrors` counts it, the run goes on.
   */
  onCheckError?: (message: string) => void;
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
  /** Answers whose correctness check threw (counted as not correct); present when any did. */
  'eval/checkErrors'?: number;
  /** Rows with a string `domain` column (multi-domain task): accuracy and mean reward per domain. */
  [perDomain: `eval/domain/${string}/${'accuracy' | 'meanReward'}`]: number;
}

/** `eval/domain/<name>/accuracy` and `/meanReward` over the rows of each domain; none without a `domain` column. */
function perDomain(examples: readonly Example[], verdicts: readonly boolean[], rewards: Float64Array) {
  const result: Record<`eval/domain/${string}/${'accuracy' | 'meanReward'}`, number> = {};
  const domains = new Set(examples.flatMap((row) => (typeof row.domain === 'string' ? [row.domain] : [])));
  for (const domain of domains) {
    const rows = examples.flatMap((row, i) => (row.domain === domain ? [i] : []));
    const finite = rows.map((i) => rewards[i]!).filter(Number.isFinite);
    result[`eval/domain/${domain}/accuracy`] = rows.filter((i) => verdicts[i]).length / rows.length;
    result[`eval/domain/${domain}/meanReward`] = finite.reduce((a, b) => a + b, 0) / Math.max(1, finite.length);
  }
  return result;
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
  // With images, a chunk at a time: each chunk's tower outputs are dropped before the next is rendered.
  const chunk = settings.vision ? 16 : Math.max(1, examples.length);
  const promptTexts: string[] = [];
  const greedy: Answer[] = [];
  const sampled: Answer[] = [];
  for (let start = 0; start < examples.length; start += chunk) {
    const part = examples.slice(start, start + chunk);
    const rendered: RenderedPrompt[] = [];
    for (const [k, example] of part.entries())
      rendered.push(await renderRunPrompt(format, settings.vision ?? null, example, `held-out row ${start + k}`));
    promptTexts.push(...rendered.map((prompt) => prompt.text));
    const shift = (list: Answer[]) => list.map((answer) => ({ ...answer, promptIndex: answer.promptIndex + start }));
    greedy.push(...shift(await answers(model, format, part, rendered, settings, 1, 0, settings.seed)));
    if (settings.passAtK > 0) {
      const { passAtK, temperature, seed } = settings;
      sampled.push(...shift(await answers(model, format, part, rendered, settings, passAtK, temperature, seed + 1)));
    }
  }
  const texts = greedy.map((answer) => answer.text);
  // One check at a time: a code task's check starts a sandbox process, and evaluation sets are hundreds long.
  let correct = 0;
  const verdicts: boolean[] = [];
  const check = checker(task, settings.onCheckError);
  for (let i = 0; i < texts.length; i++) {
    verdicts.push(await check.isCorrect(examples[i], texts[i]));
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
      truncated: greedy[i].truncated,
      episode: greedy[i].episode,
      policyLogprobs: greedy[i].logprobs,
      // As the greedy answer's own log-probs: the raw logits (temperature 1), after another prompt.
      policyLogprobsAfter: (other: RewardInput['prompt'], ids: readonly number[] = greedy[i].ids) =>
        frozenLogprobsAfter(
          model,
          (example, where) => renderRunPrompt(format, settings.vision ?? null, example, where),
          examples[i],
          other,
          ids,
          { microBatchSize: 1, temperature: 1 },
        ),
    },
  ]);
  const matrix = await (settings.scoreRewards ?? ((all) => scoreRewards(rewards, all)))(groups);
  const combined = weightedSum(matrix, weightsAt(rewards, 0));
  if (settings.onCompletion) {
    texts.forEach((completion, i) =>
      settings.onCompletion!({
        prompt: promptTexts[i],
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
    ...perDomain(examples, verdicts, combined.rewards),
  };
  if (settings.passAtK > 0) {
    const solved = new Set<number>();
    for (const answer of sampled)
      if (await check.isCorrect(examples[answer.promptIndex], answer.text)) solved.add(answer.promptIndex);
    result['eval/passAtK'] = solved.size / examples.length;
  }
  if (check.errors() > 0) result['eval/checkErrors'] = check.errors();
  return result;
}

/**
 * The task's check under the reward failure policy (rewards/run.ts): a check that throws is a failed
 * check, never a crashed evaluation; the answer is not correct, the failure is counted, and each
 * distinct message is reported once.
 */
function checker(task: Task, onError: ((message: string) => void) | undefined) {
  let errors = 0;
  const reported = new Set<string>();
  return {
    errors: () => errors,
    async isCorrect(example: Example, text: string): Promise<boolean> {
      try {
        return await task.isCorrect(example, text);
      } catch (error) {
        errors++;
        const message = error instanceof Error ? error.message : String(error);
        if (!reported.has(message)) {
          reported.add(message);
          onError?.(message);
        }
        return false;
      }
    },
  };
}

/**
 * A run's evaluation as the trainer makes it (before and after GRPO, every `evaluation.every` steps):
 * the config's held-out examples, sampling settings and seed, episodes for agent runs.
 */
export function evaluateRun(context: RunContext, onCheckError?: (message: string) => void): Promise<EvaluationResult> {
  const { config, model, task } = context;
  const examples = task.evalExamples(config.evaluation.examples, config.seed + 1);
  return evaluate(model, context.promptFormat, task, examples, context.rewards, {
    scoreRewards: context.scoreRewards,
    maxNewTokens: config.sampling.maxNewTokens,
    stopTokenIds: context.stopTokenIds,
    passAtK: config.evaluation.passAtK,
    temperature: config.sampling.temperature,
    seed: config.seed,
    vision: context.vision,
    onCheckError,
    // Agent runs are judged on whole episodes (tools and all), the way they are trained.
    episodes: config.agent
      ? {
          rollout: context.rollout,
          context: { model, tokenizer: context.tokenizer, chatTemplate: context.promptFormat.chatTemplate },
        }
      : undefined,
  });
}

interface Answer {
  promptIndex: number;
  ids: number[];
  /** What the task's check and the rewards read: the completion, or an episode's last assistant turn. */
  text: string;
  truncated: boolean;
  episode?: RewardEpisode;
  /** Per token, log π of the policy that answered; NaN for tokens it did not produce (tool output). */
  logprobs: number[];
}

/** `count` answers per prompt: single completions from the sampler, or whole episodes of the agent rollout. */
async function answers(
  model: Transformer,
  format: PromptFormat,
  examples: readonly Example[],
  rendered: readonly RenderedPrompt[],
  settings: EvaluationSettings,
  count: number,
  temperature: number,
  seed: number,
): Promise<Answer[]> {
  if (settings.episodes) {
    const samples = await settings.episodes.rollout(
      settings.episodes.context,
      examples.map((example, i) => ({ example, promptIds: rendered[i].ids, exampleIndex: i })),
      {
        groupSize: count,
        maxNewTokens: settings.maxNewTokens,
        temperature,
        topK: 0,
        topP: 1,
        minP: 0,
        stopTokenIds: settings.stopTokenIds,
        seed,
      },
    );
    return samples.map((sample) => ({
      promptIndex: sample.promptIndex,
      ids: sample.completionIds,
      text: sample.text,
      truncated: sample.truncated,
      episode: sample.episode,
      logprobs: sample.oldLogprobs.map((logprob, t) => (sample.lossMask[t] ? logprob : Number.NaN)),
    }));
  }
  const completions = generate(model, {
    prompts: rendered.map((prompt) => prompt.ids),
    promptImageFeatures: promptImageFeatures(rendered),
    numSamples: count,
    maxNewTokens: settings.maxNewTokens,
    temperature,
    stopTokenIds: settings.stopTokenIds,
    seed,
  });
  return completions.map((completion) => ({
    promptIndex: completion.promptIndex,
    ids: completion.ids,
    text: format.tokenizer.decode(completion.ids, { skipSpecialTokens: true }),
    truncated: completion.finishReason === 'length',
    logprobs: completion.logprobs,
  }));
}
