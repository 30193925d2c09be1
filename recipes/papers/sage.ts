/**
 * SAGE (#38; Liao, Dong, Xu, Monz, Bian 2026, "Self-Hinting Language Models Enhance Reinforcement
 * Learning", arXiv 2602.03143): when every rollout of a prompt is wrong, the policy itself writes
 * hints from the prompt's reference solution, and the prompt's group is rolled out again with the
 * hint in the prompt, so hard prompts give a learning signal. The reward is unchanged. Run:
 * `npx grpo train recipes/papers/sage.ts --model DIR --set taskOptions.dataDirectory=../shared/data`.
 *
 * Exact to the authors' `trainer.method: sage` (the on-policy variant, their run_sage.sh default;
 * github.com/BaohaoLiao/SAGE, recipe/hint/hint_trainer.py `fit`, `_generate_hints_batch`,
 * `_parse_hint_payload`, `_build_answer_messages_with_hint`, `_extract_question_and_solution`;
 * recipe/hint/prompt.py for the three prompts, copied verbatim):
 *   1. Roll out G completions per prompt. A prompt is resolved when one of them has reward > 0
 *      (here `solves`; default the math answer check against the row's `answer`, which is reward > 0
 *      for the 0/1 `math-answer` reward this recipe trains with).
 *   2. For each unresolved prompt that has a question (`problem`, else `question` column, else the
 *      prompt text) and a solution (`solution`, else `answer` column), the policy generates one JSON
 *      object {level_1, level_2, level_3} from HINT_SYSTEM_PROMPT and the question and solution,
 *      decoded greedily (their call sets `validate`, which takes verl's val_kwargs: temperature 0, n 1).
 *   3. For level_1, then level_2, then level_3: every prompt still unresolved whose payload has a
 *      non-empty hint at that level gets its whole group rolled out again under the hinted prompt
 *      (ANSWER_SYSTEM_PROMPT, "Question:\n…\n\nHere is a hint to help you:\n…"), which replaces the
 *      group; the prompt counts as resolved once a hinted rollout is right.
 *   4. GRPO as usual over the groups as they end: a hinted group is trained on the hinted prompt's
 *      tokens (each sample's `promptIds`), on-policy for the context it was sampled in.
 * Where this differs, and why: their hint generation retries a payload that does not parse up to 3
 * times; a greedy decode here repeats itself exactly, so it is decoded once. Their JSON parse is
 * json5 (comments, trailing commas, single quotes); JSON.parse is used, after the same fence and brace
 * handling, as no json5 package is a dependency here. The recipe's prompts are the
 * task's (GSM8K's instruction), not their data's system prompt; only hinted prompts use theirs.
 * Not here: `sage-light` (hint levels carried across epochs by per-prompt accuracy thresholds), their
 * data (sage_train) and their 3B–7B models; the tinystories fixture writes no valid hint JSON, so
 * with it runs are GRPO (src/cli/sage-recipe.test.ts checks the hinted path with a fixed hint source).
 */
import {
  singleTurnRollout,
  verifyMathAnswer,
  type Example,
  type Recipe,
  type RolloutFn,
  type RolloutPrompt,
  type RolloutSample,
  type RolloutSettings,
} from '../../src/index.js';
import { renderPrompt, type PromptFormat } from '../../src/config/prompt-format.js';
import type { RolloutContext } from '../../src/rollout/rollout.js';

/** The hint levels, weakest first (the keys of a hint payload). */
export const HINT_LEVELS = ['level_1', 'level_2', 'level_3'] as const;

/** The authors' system prompt for hint generation (recipe/hint/prompt.py HINT_SYSTEM_PROMPT). */
export const HINT_SYSTEM_PROMPT = `You are a tutoring assistant that generates progressive hints to help students solve difficult problems without revealing the solution directly.

TASK:
Given a question and its solution, generate 3 levels of hints that progressively guide the student toward solving the problem independently.

HINT LEVELS:
- Level 1: Minimal hint - Points to the key concept or approach without specifics
- Level 2: Medium hint - Provides more direction on the method or intermediate steps
- Level 3: Detailed hint - Gives substantial guidance while still requiring the student to complete the solution

GUIDELINES:
- Never reveal the final answer
- Hints should inspire problem-solving, not just provide steps to copy
- Tailor hint difficulty to bridge the gap between the student's level and the solution

OUTPUT FORMAT:
\`\`\`json
{
    "level_1": "minimal hint text",
    "level_2": "medium hint text",
    "level_3": "detailed hint text"
}
\`\`\``;

/** The authors' system prompt for answering with a hint (recipe/hint/prompt.py ANSWER_SYSTEM_PROMPT). */
export const ANSWER_SYSTEM_PROMPT = 'Please reason step by step, and put your final answer within \\boxed{}.';

/** A hint-generation request: the unresolved prompt's position in the step, its question and solution. */
export interface HintRequest {
  promptIndex: number;
  question: string;
  solution: string;
}

/** Writes hint payloads ({level_1, level_2, level_3}) for requests; a request left out gets no hint. */
export type HintSource = (
  context: RolloutContext,
  requests: readonly HintRequest[],
  settings: RolloutSettings,
) => Promise<Map<number, Record<string, unknown>>>;

export interface SageOptions {
  /** Whether a completion solves the row (a resolved prompt has one). Default: math answer = row.answer. */
  solves?: (example: Example, completion: string) => boolean | Promise<boolean>;
  /** Where hints come from. Default: the policy itself ({@link selfHints}). */
  hints?: HintSource;
}

const nonEmpty = (value: unknown): value is string => typeof value === 'string' && value.trim() !== '';

/** The question and solution SAGE hints from, as `_extract_question_and_solution` reads them; null = no hint. */
export function questionAndSolution(example: Example): { question: string; solution: string } | null {
  const question = [example.problem, example.question, example.prompt].find(nonEmpty)?.trim();
  const solution = [example.solution, example.answer].find(nonEmpty)?.trim();
  return question && solution ? { question, solution } : null;
}

/**
 * A generated hint text as `_parse_hint_payload` reads it: the body of a ```json fence (or of a
 * plain ``` fence when the text starts with one), from its first `{`, parsed as one JSON object;
 * null otherwise. Their fallback (the span from the first `{` to the last `}`) catches
 * json.JSONDecodeError, which json5 never raises (its errors are ValueError), so it is not taken.
 */
export function parseHintPayload(text: string): Record<string, unknown> | null {
  let body = text;
  const jsonFence = body.toLowerCase().indexOf('```json');
  if (jsonFence !== -1) {
    const end = body.indexOf('```', jsonFence + 6);
    // Their slice starts 6 characters in, after "```jso": the stray "n" is dropped by the brace step.
    if (end !== -1) body = body.slice(jsonFence + 6, end).trim();
  } else if (body.startsWith('```') && body.split('```').length - 1 >= 2) {
    const end = body.indexOf('```', 3);
    if (end !== -1) body = body.slice(3, end).trim();
  }
  const brace = body.indexOf('{');
  try {
    const parsed: unknown = JSON.parse(brace > 0 ? body.slice(brace) : body);
    return parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)
      ? (parsed as Record<string, unknown>)
      : null;
  } catch {
    return null;
  }
}

const formatOf = (context: RolloutContext): PromptFormat => ({
  tokenizer: context.tokenizer,
  chatTemplate: context.chatTemplate ?? null,
});

/** The hint request as the policy sees it: HINT_SYSTEM_PROMPT, then "Question: \n…\n\nSolution:\n…\n". */
export function hintRequestPrompt(format: PromptFormat, request: HintRequest): number[] {
  const user = `Question: \n${request.question}\n\nSolution:\n${request.solution}\n`;
  return renderPrompt(format, { prompt: user, system: HINT_SYSTEM_PROMPT }).ids;
}

/** The prompt a hinted group is rolled out and trained on. */
export function hintedPrompt(format: PromptFormat, question: string, hint: string): number[] {
  const user = `Question:\n${question}\n\nHere is a hint to help you:\n${hint}`;
  return renderPrompt(format, { prompt: user, system: ANSWER_SYSTEM_PROMPT }).ids;
}

/**
 * Whether a prompt leaves room for the completion in the model's positions. Their prompts go through
 * `postprocess_data` with truncation 'error', and a prompt it refuses is skipped (no hint / no
 * hinted re-rollout for that question); a prompt that does not fit is skipped here the same way.
 */
const fits = (context: RolloutContext, promptIds: readonly number[], settings: RolloutSettings) =>
  promptIds.length + settings.maxNewTokens <= context.model.config.maxPositionEmbeddings;

/** SAGE's hints: the policy's greedy answer to the hint request, parsed ({@link parseHintPayload}). */
export const selfHints: HintSource = async (context, requests, settings) => {
  const format = formatOf(context);
  const asked = requests
    .map((request) => ({ request, promptIds: hintRequestPrompt(format, request) }))
    .filter(({ promptIds }) => fits(context, promptIds, settings));
  const payloads = new Map<number, Record<string, unknown>>();
  if (asked.length === 0) return payloads;
  const prompts = asked.map(({ request, promptIds }) => ({ example: { prompt: request.question }, promptIds }));
  const drafts = await singleTurnRollout(context, prompts, { ...settings, groupSize: 1, temperature: 0 });
  for (const draft of drafts) {
    const payload = parseHintPayload(draft.text.trim());
    if (payload) payloads.set(asked[draft.promptIndex].request.promptIndex, payload);
  }
  return payloads;
};

/** The SAGE rollout (`trainer.method: sage`): plain groups, then hinted re-rollouts of the unresolved ones. */
export function sageRollout(options: SageOptions = {}): RolloutFn {
  const solves = options.solves ?? ((example, completion) => verifyMathAnswer(completion, String(example.answer)));
  const hints = options.hints ?? selfHints;
  return async (context, prompts, settings) => {
    const groupSize = settings.groupSize;
    const samples: RolloutSample[] = await singleTurnRollout(context, prompts, settings);
    const groupSolved = async (index: number) => {
      for (const sample of samples.slice(index * groupSize, (index + 1) * groupSize))
        if (await solves(prompts[index].example, sample.text)) return true;
      return false;
    };
    const resolved = await Promise.all(prompts.map((_, index) => groupSolved(index)));
    const requests = prompts.flatMap((prompt, promptIndex) => {
      const pair = resolved[promptIndex] ? null : questionAndSolution(prompt.example);
      return pair ? [{ promptIndex, ...pair }] : [];
    });
    if (requests.length === 0) return samples;
    const payloads = await hints(context, requests, settings);
    const format = formatOf(context);
    for (const [level, key] of HINT_LEVELS.entries()) {
      const candidates = requests.flatMap((request) => {
        const hint = payloads.get(request.promptIndex)?.[key];
        if (resolved[request.promptIndex] || !nonEmpty(hint)) return [];
        const promptIds = hintedPrompt(format, request.question, hint);
        return fits(context, promptIds, settings) ? [{ request, promptIds }] : [];
      });
      if (candidates.length === 0) continue;
      const targets = candidates.map(({ request }) => request);
      const hinted: RolloutPrompt[] = candidates.map(({ request, promptIds }) => ({
        ...prompts[request.promptIndex],
        promptIds,
      }));
      // A seed of its own per level, so a level's re-rollout is not the same draw as the plain one.
      const rerolled = await singleTurnRollout(context, hinted, { ...settings, seed: settings.seed + level + 1 });
      // Groups are contiguous, G per prompt in prompt order: the k-th re-rollout of a target replaces
      // the k-th sample of its group (their _replace_slices).
      rerolled.forEach((sample, j) => {
        const { promptIndex } = targets[sample.promptIndex];
        samples[promptIndex * groupSize + (j % groupSize)] = {
          ...sample,
          promptIndex,
          promptIds: hinted[sample.promptIndex].promptIds,
        };
      });
      for (const { promptIndex } of targets) resolved[promptIndex] = await groupSolved(promptIndex);
    }
    return samples;
  };
}

export default {
  config: {
    task: 'gsm8k',
    sampling: { groupSize: 8, maxNewTokens: 256, temperature: 1 },
    rewards: [{ name: 'math-answer' }],
    grpo: { steps: 100, promptsPerStep: 8 },
    evaluation: { examples: 50, every: 50 },
  },
  rollout: sageRollout(),
} satisfies Recipe;
