/**
 * MOTIF (#19; Mitra & Ulukus 2025, "MOTIF: Modular Thinking via Reinforcement Fine-tuning in LLMs",
 * arXiv 2507.02851): GRPO for multi-round thinking (the INFTYTHINK architecture), where the model
 * answers in 3 rounds and each round sees only the question and the previous round's progress. The
 * trained completion is the first round; its accuracy reward comes from rolling the later rounds
 * out. Run: `npx grpo train recipes/papers/motif.ts --model DIR --set taskOptions.dataDirectory=../shared/data`.
 *
 * Exact to the authors' code (github.com/purbeshmitra/MOTIF, motif.py: SYSTEM_PROMPT,
 * `extract_xml_answer`, `model_iteration`, `total_reward_func`, `count_xml`, the format rewards):
 *   1. G first-round completions per prompt, under their SYSTEM_PROMPT (the recipe sets it as the
 *      task's system prompt, so the trained prompt is theirs: system prompt, then the question).
 *   2. For each completion, 4 trajectories (`traj_num`) of rounds 2 and 3 (`max_iter` 3): round k's
 *      prompt is the question + ` Progress in round k−1: "<the previous round's <answer> text>"`,
 *      and the last round adds ` Current round is the final (third) round. Provide a final answer.`;
 *      sampled at temperature 0.8, top-p 0.95. These rounds are not trained.
 *   3. `motif-outcome`: per trajectory 2 if `\boxed{a}` (a: the gold answer after `####`) is in the
 *      last round's <answer> text, else 1 if it is anywhere in the last round, else 0; the mean over
 *      the 4 trajectories is the completion's reward. `xmlcount`, `soft-format` and `strict-format`
 *      score the first-round completion itself. All four weigh 1 (TRL's default weights), β = 0.
 * Where this differs, and why: their later rounds may write 2048 tokens; here they get the run's
 * `sampling.maxNewTokens` (a small model's positions are few), and a round prompt that does not fit
 * the model's positions stops the run with an error naming it (vLLM refuses it there too). The
 * 4-trajectory outcome reaches the reward as the sample's episode (`environmentReward`), so
 * samples.jsonl shows the first trajectory's rounds. Held-out accuracy is the task's check of one
 * greedy first round; their evaluation runs all 3 rounds greedily and looks for \boxed{a} in the last
 * (the trainer's evaluation samples single completions). Not here: their LoRA on Qwen2.5-3B-Instruct,
 * the GSM8K train split (the shared data has the test split) and their learning rate (5e-6 for LoRA).
 */
import {
  singleTurnRollout,
  type ChatMessage,
  type NamedReward,
  type Recipe,
  type RewardInput,
  type RolloutFn,
  type RolloutPrompt,
  type RolloutSample,
  type RolloutSettings,
} from '../../src/index.js';
import { renderPrompt } from '../../src/config/prompt-format.js';
import type { RolloutContext } from '../../src/rollout/rollout.js';

/** The authors' system prompt (motif.py SYSTEM_PROMPT, verbatim, with its leading and trailing newline). */
export const MOTIF_SYSTEM_PROMPT = `
You are a helpful assistant. When the user asks a question, you solve it in 3 rounds.
In each round, you first think about the reasoning process of answering and then provide the user with a detailed progress about it.
The reasoning process and the progress are enclosed within <reasoning> </reasoning> and <answer> </answer> tags respectively.
Therefore, you follow the strict format:
<reasoning>
reasoning process here
</reasoning>
<answer>
detailed progress here
</answer>

The User provides this detailed progress as additional context in the next round.
You then respond again with further thinking and further progress.
When the User says that current round is the final (third) round, you provide an answer inside the answer tags.
You also enclose a final answer in third round in the box: \\boxed{}. Only this boxed final answer is used for evaluation.
`;

/** The text after the last `<answer>` up to the next `</answer>`, trimmed; the whole text without tags (extract_xml_answer). */
export function extractXmlAnswer(text: string): string {
  return text.split('<answer>').at(-1)!.split('</answer>')[0].trim();
}

/** The gold answer `a` of `\boxed{a}`: the text after `####` (extract_hash_answer), else the whole column. */
export function motifGoldAnswer(row: Readonly<Record<string, unknown>>): string {
  const answer = String(row.answer ?? '');
  return answer.includes('####') ? answer.split('####')[1].trim() : answer.trim();
}

/**
 * The user turn of round `round` (2…rounds): the question and the previous round's progress
 * (model_iteration's augmented_prompt; only the latest progress, never the earlier ones).
 */
export function motifRoundPrompt(question: string, previousRound: string, round: number, rounds: number): string {
  const progress = `${question} Progress in round ${round - 1}: "${extractXmlAnswer(previousRound)}"`;
  // Their text says "(third)" whatever max_iter is; kept as written.
  return round === rounds ? `${progress} Current round is the final (third) round. Provide a final answer.` : progress;
}

/** One trajectory's score from its last round: 2 if \boxed{a} is in the <answer> text, 1 if elsewhere in it, else 0. */
export function motifTrajectoryScore(lastRound: string, goldAnswer: string): number {
  const boxed = `\\boxed{${goldAnswer}}`;
  if (extractXmlAnswer(lastRound).includes(boxed)) return 2;
  return lastRound.includes(boxed) ? 1 : 0;
}

const count = (text: string, part: string) => text.split(part).length - 1;

/** Their `count_xml`: 0.125 per well-placed tag, less 0.001 per character after the closing answer tag. */
export function countXml(text: string): number {
  let total = 0;
  if (count(text, '<reasoning>\n') === 1) total += 0.125;
  if (count(text, '\n</reasoning>\n') === 1) total += 0.125;
  if (count(text, '\n<answer>\n') === 1) {
    total += 0.125;
    total -= text.split('\n</answer>\n').at(-1)!.length * 0.001;
  }
  if (count(text, '\n</answer>') === 1) {
    total += 0.125;
    total -= (text.split('\n</answer>').at(-1)!.length - 1) * 0.001;
  }
  return total;
}

// Python's re.match anchors at the start only, and `.` stops at newlines (no DOTALL); its `$` also
// matches before one final newline, hence `\n?$` where the pattern ends.
const SOFT_FORMAT = /^<reasoning>.*?<\/reasoning>\s*<answer>.*?<\/answer>/;
const STRICT_FORMAT = /^<reasoning>\n.*?\n<\/reasoning>\n<answer>\n.*?\n<\/answer>\n\n?$/;

/** Their `soft_format_reward_func`: 0.5 when the completion starts with the tags (one-line contents). */
export const softFormat = (text: string): number => (SOFT_FORMAT.test(text) ? 0.5 : 0);

/** Their `strict_format_reward_func`: 0.5 for exactly the four-line-block format. */
export const strictFormat = (text: string): number => (STRICT_FORMAT.test(text) ? 0.5 : 0);

export interface MotifOptions {
  /** Trajectories of the later rounds per first-round completion (`traj_num`, default 4). */
  trajectories?: number;
  /** Rounds in all, the first included (`max_iter`, default 3). */
  rounds?: number;
  /** Sampling of the later rounds (their SamplingParams: temperature 0.8, top-p 0.95). */
  temperature?: number;
  topP?: number;
  /** The system prompt of the later rounds (default theirs; the first round uses the task's). */
  systemPrompt?: string;
  /** Generates the later rounds (default the run's sampler); tests pass a scripted one. */
  generate?: RolloutFn;
}

const questionOf = (prompt: RolloutPrompt): string => {
  const question = prompt.example.prompt;
  if (typeof question !== 'string')
    throw new Error('MOTIF: a round prompt is the question text plus progress, so the row needs a text prompt');
  return question;
};

/**
 * The MOTIF rollout: the first round as the run samples it, then `trajectories` rollouts of the
 * later rounds per completion, whose mean score is the completion's `motif-outcome` (carried as
 * its episode's `environmentReward`; the episode's messages are the first trajectory's rounds).
 */
export function motifRollout(options: MotifOptions = {}): RolloutFn {
  const trajectories = options.trajectories ?? 4;
  const rounds = options.rounds ?? 3;
  const generate = options.generate ?? singleTurnRollout;
  const system = options.systemPrompt ?? MOTIF_SYSTEM_PROMPT;
  if (!Number.isInteger(trajectories) || trajectories < 1)
    throw new RangeError(`MOTIF: trajectories must be a positive integer, got ${trajectories}`);
  if (!Number.isInteger(rounds) || rounds < 2)
    throw new RangeError(`MOTIF: rounds must be an integer ≥ 2, got ${rounds}`);
  return async (context: RolloutContext, prompts, settings: RolloutSettings): Promise<RolloutSample[]> => {
    const samples = await singleTurnRollout(context, prompts, settings);
    const format = { tokenizer: context.tokenizer, chatTemplate: context.chatTemplate ?? null };
    const later: RolloutSettings = {
      ...settings,
      temperature: options.temperature ?? 0.8,
      topP: options.topP ?? 0.95,
      topK: 0,
      minP: 0,
    };
    // history[i * trajectories + k]: the user turns and answers of trajectory k of sample i after round 1.
    const history: ChatMessage[][] = samples.flatMap(() => Array.from({ length: trajectories }, () => []));
    let previous = samples.map((sample) => sample.text);
    for (let round = 2; round <= rounds; round++) {
      // Round 2 branches each completion into its trajectories; later rounds continue each one once.
      const sources = round === 2 ? samples.map((_, i) => i) : history.map((_, t) => t);
      const roundPrompts: RolloutPrompt[] = sources.map((source, j) => {
        const sample = samples[round === 2 ? source : Math.floor(source / trajectories)];
        const user = motifRoundPrompt(questionOf(prompts[sample.promptIndex]), previous[j], round, rounds);
        const promptIds = renderPrompt(format, { prompt: user, system }).ids;
        if (promptIds.length + settings.maxNewTokens > context.model.config.maxPositionEmbeddings)
          throw new Error(
            `MOTIF: the round-${round} prompt (${promptIds.length} tokens) and sampling.maxNewTokens (${settings.maxNewTokens}) do not fit the model's ${context.model.config.maxPositionEmbeddings} positions; lower sampling.maxNewTokens`,
          );
        return { example: { prompt: user, system }, promptIds };
      });
      const groupSize = round === 2 ? trajectories : 1;
      const answers = await generate(context, roundPrompts, {
        ...later,
        groupSize,
        seed: settings.seed + 7919 * round,
      });
      if (answers.length !== history.length)
        throw new Error(`MOTIF: round ${round} returned ${answers.length} answers for ${history.length} trajectories`);
      // Answer t is trajectory t's: round 2 gives prompt i its answers i·trajectories … i·trajectories + k.
      answers.forEach((answer, t) => {
        const asked = roundPrompts[round === 2 ? Math.floor(t / trajectories) : t].example.prompt as string;
        history[t].push({ role: 'user', content: asked }, { role: 'assistant', content: answer.text });
      });
      previous = answers.map((answer) => answer.text);
    }
    return samples.map((sample, i) => {
      const gold = motifGoldAnswer(prompts[sample.promptIndex].example);
      const ends = history.slice(i * trajectories, (i + 1) * trajectories).map((turns) => turns.at(-1)!.content);
      const outcome = ends.reduce((total, end) => total + motifTrajectoryScore(String(end), gold), 0) / trajectories;
      const first: ChatMessage[] = [
        { role: 'user', content: questionOf(prompts[sample.promptIndex]) },
        { role: 'assistant', content: sample.text },
      ];
      return {
        ...sample,
        episode: {
          messages: [...first, ...history[i * trajectories]],
          toolCalls: [],
          turns: rounds,
          turnRewards: [],
          stopReason: 'rounds',
          environmentReward: outcome,
        },
      };
    });
  };
}

/** `motif-outcome`: the mean trajectory score the MOTIF rollout computed for this completion. */
export const motifOutcome = ({ episode }: RewardInput): number | null => episode?.environmentReward ?? null;

/** The four rewards of their trainer, each weighing 1. */
export const motifRewards: NamedReward[] = [
  { name: 'motif-outcome', reward: motifOutcome, weight: 1 },
  { name: 'xmlcount', reward: ({ completion }: RewardInput) => countXml(completion), weight: 1 },
  { name: 'soft-format', reward: ({ completion }: RewardInput) => softFormat(completion), weight: 1 },
  { name: 'strict-format', reward: ({ completion }: RewardInput) => strictFormat(completion), weight: 1 },
];

export default {
  config: {
    task: 'gsm8k',
    taskOptions: { systemPrompt: MOTIF_SYSTEM_PROMPT },
    sampling: { groupSize: 8, maxNewTokens: 256 },
    algorithm: { klCoefficient: 0 },
    grpo: { steps: 100, promptsPerStep: 1 },
    evaluation: { examples: 50, every: 50 },
  },
  rewards: motifRewards,
  rollout: motifRollout(),
} satisfies Recipe;
