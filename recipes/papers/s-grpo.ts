/**
 * S-GRPO (#25, Dai et al. 2025, "S-GRPO: Early Exit via Reinforcement Learning in Reasoning Models",
 * arXiv 2505.07686): a serial group of early exits of one chain of thought, with rewards that decay
 * along the exits. Run: `npx grpo train recipes/papers/s-grpo.ts`.
 *
 * Is: the serial early-exit rollout (`serialExitRollout`, selected by this recipe; `provides:
 * ['serialExits']`, which `algorithm.advantage: s-grpo` needs), a task with a redundant check in its
 * thinking, and the recipe's settings. The rollout, as the paper describes it (no authors' code was
 * found; read in the paper's summaries on alphaxiv, themoonlight and two re-implementations, which
 * agree): per prompt, sample ONE full completion O_0 = {T_1..T_n, </think>, C_0}; draw m = G − 1
 * exit positions P ~ Uniform(1, n) over its thinking tokens, sorted; for each, keep T_1..T_P, append
 * the answer inducer, and sample the answer C_k after it. The group is [O_1..O_m, O_0], earliest exit
 * first, each sample the prefix, the inducer and its answer, all trained (the paper's O_i =
 * {T_1..T_P, </think>, C_i}); π_old of each exit is recomputed with one forward. The reward and
 * advantage are the `s-grpo` estimator's: r = 1/2^(N_right − 1) for a correct exit, N_right counting
 * correct exits so far, else 0; A = r − mean(r), no std.
 *
 * Is not: the paper's inducer text for a chat model ("Time is limited, stop thinking and start
 * answering.\n</think>\n\n", `PAPER_ANSWER_INDUCER`, the rollout's default); this recipe's small
 * character model never saw English, so its inducer is the end-of-thinking marker alone, which is
 * the paper's O_i. Their Qwen3/DeepSeek-distill models, learning rate 1e-6 and batch are not here.
 *
 * Task (defined here): two-digit addition whose teacher thinks digit by digit, writes the sum, then
 * on 80% of its demonstrations checks it by subtraction before closing the thought:
 * `<think>7+5=12,3+4+1=8,82;82-45=37</think>\n82` (else `<think>7+5=12,3+4+1=8,82</think>\n82`).
 * Exits after the sum can be right, so the decaying reward favours closing the thought there. Not
 * seen at this size: 100 steps left the thought's length and accuracy as they were
 * (docs/paper-recipes.md, "Measured").
 */
import {
  Random,
  generate,
  generatedSplit,
  noGrad,
  type Example,
  type Pick,
  type Recipe,
  type RewardFn,
  type RolloutFn,
  type RolloutSample,
  type Task,
} from '../../src/index.js';
import { completionLogprobs } from '../../src/trainer/completion-logprobs.js';

/** Fraction of the teacher's thoughts that check the sum before closing (the rest close right after it). */
const TEACHER_CHECK_RATE = 0.8;

/** The paper's answer inducer, appended after the truncated thought of a chat model. */
export const PAPER_ANSWER_INDUCER = 'Time is limited, stop thinking and start answering.\n</think>\n\n';

/** Options of {@link serialExitRollout}. */
export interface SerialExitOptions {
  /** Text that ends the thought in a full completion (its first occurrence bounds T_1..T_n). */
  endOfThinking?: string;
  /** Text appended after each truncated thought (default: the paper's, `PAPER_ANSWER_INDUCER`). */
  answerInducer?: string;
  /** Most tokens of each early exit's answer (default: `sampling.maxNewTokens`). */
  answerMaxTokens?: number;
}

/** The first index of `needle` in `haystack`, or -1. */
function indexOf(haystack: readonly number[], needle: readonly number[]): number {
  for (let start = 0; start + needle.length <= haystack.length; start++)
    if (needle.every((id, k) => haystack[start + k] === id)) return start;
  return -1;
}

/**
 * S-GRPO's serial group as a rollout: for each prompt one full completion, then `groupSize − 1`
 * early exits at sorted positions drawn uniformly over its thinking tokens, earliest first, the full
 * completion last (the order `s-grpo` reads). See the file header for the paper's description.
 */
export function serialExitRollout(options: SerialExitOptions = {}): RolloutFn {
  const endOfThinking = options.endOfThinking ?? '</think>';
  const answerInducer = options.answerInducer ?? PAPER_ANSWER_INDUCER;
  if (endOfThinking === '') throw new Error('serialExitRollout: endOfThinking must not be empty');
  if (
    options.answerMaxTokens !== undefined &&
    !(Number.isInteger(options.answerMaxTokens) && options.answerMaxTokens > 0)
  )
    throw new Error(`serialExitRollout: answerMaxTokens must be a positive integer, got ${options.answerMaxTokens}`);
  const rollout: RolloutFn = async ({ model, tokenizer }, prompts, settings) => {
    if (settings.groupSize < 2)
      throw new Error('serialExitRollout: sampling.groupSize must be at least 2 (m exits + the full completion)');
    const sampling = {
      temperature: settings.temperature,
      topK: settings.topK,
      topP: settings.topP,
      minP: settings.minP,
    };
    const stopTokenIds = settings.stopTokenIds;
    const chains = generate(model, {
      prompts: prompts.map((prompt) => prompt.promptIds),
      numSamples: 1,
      maxNewTokens: settings.maxNewTokens,
      stopTokenIds,
      seed: settings.seed,
      ...sampling,
    });
    const markerIds = tokenizer.encode(endOfThinking, { addSpecialTokens: false });
    const inducerIds = tokenizer.encode(answerInducer, { addSpecialTokens: false });
    const random = new Random(settings.seed + 1);
    const exits = settings.groupSize - 1;
    // Per prompt: the m exit prefixes (thought tokens kept), drawn as i ~ Uniform(1, n) and sorted.
    const prefixes = chains.map((chain) => {
      const marker = indexOf(chain.ids, markerIds);
      const stopped = stopTokenIds.includes(chain.ids.at(-1) ?? -1) ? chain.ids.length - 1 : chain.ids.length;
      const thought = marker >= 0 ? marker : stopped;
      const positions = Array.from({ length: exits }, () => (thought > 0 ? 1 + random.integer(thought) : 0));
      return positions.sort((a, b) => a - b).map((position) => [...chain.ids.slice(0, position), ...inducerIds]);
    });
    const answers = generate(model, {
      prompts: prompts.flatMap((prompt, p) => prefixes[p].map((prefix) => [...prompt.promptIds, ...prefix])),
      numSamples: 1,
      maxNewTokens: options.answerMaxTokens ?? settings.maxNewTokens,
      stopTokenIds,
      seed: settings.seed + 2,
      ...sampling,
    });
    const exitSequences = prompts.flatMap((prompt, p) =>
      prefixes[p].map((prefix, k) => ({
        promptIndex: p,
        promptIds: prompt.promptIds,
        completionIds: [...prefix, ...answers[p * exits + k].ids],
        truncated: answers[p * exits + k].finishReason === 'length',
      })),
    );
    // π_old of the exits (the inducer was not sampled), as the trainer's forward computes it.
    const { logprobs, Tc } = noGrad(() => completionLogprobs(model, exitSequences, settings.temperature));
    const samples: RolloutSample[] = [];
    prompts.forEach((_, p) => {
      for (let k = 0; k < exits; k++) {
        const index = p * exits + k;
        const { promptIndex, completionIds, truncated } = exitSequences[index];
        samples.push({
          promptIndex,
          completionIds,
          oldLogprobs: Array.from(logprobs.data.slice(index * Tc, index * Tc + completionIds.length)),
          lossMask: completionIds.map(() => 1),
          text: tokenizer.decode(completionIds, { skipSpecialTokens: true }),
          truncated,
        });
      }
      const chain = chains[p];
      samples.push({
        promptIndex: p,
        completionIds: chain.ids,
        oldLogprobs: chain.logprobs,
        lossMask: chain.ids.map(() => 1),
        text: tokenizer.decode(chain.ids, { skipSpecialTokens: true }),
        truncated: chain.finishReason === 'length',
      });
    });
    return samples;
  };
  return Object.assign(rollout, { provides: ['serialExits'] as const });
}

function makeRow(pick: Pick): Example {
  const a = 10 + pick(90);
  const b = 10 + pick(90);
  return { prompt: `${a}+${b}`, a, b, answer: String(a + b) };
}

/** The teacher's thought: the sum digit by digit, then (with `check`) a redundant check by subtraction. */
export function teacherThought(a: number, b: number, check = true): string {
  const units = (a % 10) + (b % 10);
  const tens = Math.floor(a / 10) + Math.floor(b / 10) + Math.floor(units / 10);
  const carry = units >= 10 ? '+1' : '';
  const sum = `${a % 10}+${b % 10}=${units},${Math.floor(a / 10)}+${Math.floor(b / 10)}${carry}=${tens},${a + b}`;
  return check ? `${sum};${a + b}-${b}=${a}` : sum;
}

/** The answer: the text after the last end-of-thinking marker, trimmed; null without one. */
const answerOf = (completion: string) =>
  completion.includes('</think>') ? completion.split('</think>').at(-1)!.trim() : null;

const correct: RewardFn = ({ completion, row }) => (answerOf(completion) === row.answer ? 1 : 0);

export const task: Task = {
  name: 'addition-with-check',
  description: 'two-digit addition with a thought that checks the sum (S-GRPO #25: exit the thought early)',
  alphabet: '0123456789+-=,;<think>/\n',
  trainExamples: (count, seed) => generatedSplit('addition-with-check', count, seed, false, makeRow),
  evalExamples: (count, seed) => generatedSplit('addition-with-check', count, seed, true, makeRow),
  demonstration: (row, draw) =>
    `<think>${teacherThought(Number(row.a), Number(row.b), draw() < TEACHER_CHECK_RATE)}</think>\n${row.answer}`,
  rewards: () => [{ name: 'correct', reward: correct, weight: 1 }],
  isCorrect: (row, completion) => answerOf(completion) === row.answer,
};

export default {
  config: {
    task: 'addition-with-check',
    model: { hiddenSize: 64, numLayers: 2, numHeads: 4 },
    sft: { steps: 400, batchSize: 32, learningRate: 3e-3, warmupSteps: 20, schedule: 'cosine' },
    sampling: { groupSize: 16, maxNewTokens: 48, temperature: 1 },
    grpo: { steps: 100, promptsPerStep: 4, microBatchSize: 64, learningRate: 2e-5 },
    algorithm: { advantage: 's-grpo', loss: 'ppo-clip', aggregation: 'seq-mean-token-mean', klCoefficient: 0 },
    evaluation: { examples: 60 },
    checkpoint: { every: 1000 },
    logging: { printEvery: 10 },
  },
  task,
  rollout: serialExitRollout({ answerInducer: '</think>\n', answerMaxTokens: 6 }),
} satisfies Recipe;
