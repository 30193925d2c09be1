/**
 * Scaf-GRPO (#216; Zhang et al. 2025, "Scaf-GRPO: Scaffolded Group Relative Policy Optimization for
 * Enhancing LLM Reasoning", arXiv 2510.19807): after a guidance-free warm-up, a prompt whose G
 * rollouts all fail is tried again with tiered in-prompt hints written beforehand (knowledge hints,
 * then solution hints, each 1 to 4 parts cumulatively), and one failed rollout of its group is
 * replaced by the right hinted rollout that needed the fewest hints. Run:
 * `npx grpo train recipes/papers/scaf-grpo.ts --model DIR --set taskOptions.dataDirectory=../shared/data`.
 *
 * Exact to the authors' released trainer (github.com/JIA-Lab-research/Scaf-GRPO,
 * hint_mix_grpo/trainer/ray_trainer.py `fit` and `build_new_message`; sh/hint_mix_grpo/bs256_6k_mix.sh:
 * warmup_steps 50, replace_num 1, replace_hint_prompt False):
 *   1. G completions per prompt, scored. Before step warmupSteps + 1 nothing else happens.
 *   2. Each prompt with no right completion (their reward is 0/1; here `solves`, default the math
 *      answer check against the row's `answer`) gets 8 hinted prompts, one completion each, sampled
 *      as the group was: for each stage (their released code has two: `knowledge_components_parts`
 *      "Knowledge Hints", then `solution_breakdown_parts` "Solution Hints"; planning is commented
 *      out) and k = 1..4, "Question: {question}\n{label}: {the first k parts joined by spaces}"
 *      after the system prompt "Please reason step by step, and put your final answer within
 *      \boxed{}.". Levels are numbered in that order, 1–8.
 *   3. When some hinted completion is right, the one at the lowest level (the first at that level)
 *      replaces the group's first completion, with its hinted prompt (replace_hint_prompt False: the
 *      whole sequence is replaced, so it is trained on the tokens it was sampled after; their batch
 *      is reordered for balancing first, so which wrong completion goes is arbitrary there). The group,
 *      now one right and G − 1 wrong, goes to the usual advantage (GRPO's by default).
 * The warm-up counts GRPO steps (`settings.step`, kept across a resume and the same for a step's
 * refill rounds); a caller outside a step (no `step`) counts this rollout's calls instead. The question is the row's `question`
 * column, as theirs, else the prompt text. Where the row lacks a stage's parts
 * (their data always has both) that stage is skipped: their code would prompt with an empty hint.
 * A hinted prompt that does not fit the model's positions with `sampling.maxNewTokens` is skipped;
 * their `build_new_message` raises (truncation 'error') and stops the run.
 * The recipe's data: GSM8K rows, with `solution_breakdown_parts` the lines of the reference
 * solution (calculator annotations and the #### line removed) and no knowledge parts; their
 * hints (hkuzxc/scaf-grpo-dataset, written by a strong model) are not here, nor their Qwen2.5-Math
 * models. Rows of your own with both columns (lists of strings) are used as they are; rows without
 * `solution_breakdown_parts` get the lines of their `answer` column (before any ####) instead.
 */
import {
  singleTurnRollout,
  verifyMathAnswer,
  type Example,
  type Recipe,
  type RolloutFn,
  type RolloutPrompt,
} from '../../src/index.js';
import { renderPrompt } from '../../src/config/prompt-format.js';
import { gsm8kReasoning } from '../../src/data/tasks/gsm8k.js';
import { ANSWER_SYSTEM_PROMPT } from './sage.js';

/** The stages of the released code, in level order: the row's column of hint parts and its label. */
export const HINT_STAGES = [
  ['knowledge_components_parts', 'Knowledge Hints'],
  ['solution_breakdown_parts', 'Solution Hints'],
] as const;

/** Hints per stage: the first 1, 2, 3 and 4 parts. */
const PARTS_PER_STAGE = 4;

export interface ScafOptions {
  /** Steps without hints (their `trainer.warmup_steps`, 50 in their script). */
  warmupSteps?: number;
  /** Whether a completion is right (their reward == 1). Default: math answer = row.answer. */
  solves?: (example: Example, completion: string) => boolean | Promise<boolean>;
  /** The row's hint parts per stage column. Default: the row's own columns (lists of strings). */
  hintParts?: (example: Example, column: (typeof HINT_STAGES)[number][0]) => readonly string[];
}

const stringList = (value: unknown): string[] =>
  Array.isArray(value) ? value.filter((part): part is string => typeof part === 'string') : [];

/** The hinted user messages of a row, lowest level first, as `build_new_message` writes them. */
export function hintContents(
  question: string,
  partsOf: (column: (typeof HINT_STAGES)[number][0]) => readonly string[],
): string[] {
  return HINT_STAGES.flatMap(([column, label]) => {
    const parts = partsOf(column);
    if (parts.length === 0) return [];
    return Array.from(
      { length: PARTS_PER_STAGE },
      (_, k) => `Question: ${question}\n${label}: ${parts.slice(0, k + 1).join(' ')}`,
    );
  });
}

/** The Scaf-GRPO rollout: plain groups; after the warm-up, hinted tries for all-wrong groups. */
export function scafRollout(options: ScafOptions = {}): RolloutFn {
  const warmupSteps = options.warmupSteps ?? 50;
  const solves = options.solves ?? ((example, completion) => verifyMathAnswer(completion, String(example.answer)));
  const hintParts = options.hintParts ?? ((example, column) => stringList(example[column]));
  let calls = 0;
  return async (context, prompts, settings) => {
    calls += 1;
    const samples = await singleTurnRollout(context, prompts, settings);
    // `step` is 0-based: the first step after the warm-up is step warmupSteps.
    if ((settings.step === undefined ? calls : settings.step + 1) <= warmupSteps) return samples;
    const G = settings.groupSize;
    const format = { tokenizer: context.tokenizer, chatTemplate: context.chatTemplate ?? null };
    const limit = context.model.config.maxPositionEmbeddings - settings.maxNewTokens;
    // Every hinted prompt of every all-wrong group, with the group it may help and its level.
    const tries: { promptIndex: number; level: number; prompt: RolloutPrompt }[] = [];
    for (const [promptIndex, prompt] of prompts.entries()) {
      const group = samples.slice(promptIndex * G, (promptIndex + 1) * G);
      const right = await Promise.all(group.map((sample) => solves(prompt.example, sample.text)));
      if (right.some(Boolean)) continue;
      const question = typeof prompt.example.question === 'string' ? prompt.example.question : prompt.example.prompt;
      if (typeof question !== 'string') continue;
      hintContents(question, (column) => hintParts(prompt.example, column)).forEach((content, level) => {
        const promptIds = renderPrompt(format, { prompt: content, system: ANSWER_SYSTEM_PROMPT }).ids;
        if (promptIds.length <= limit) tries.push({ promptIndex, level, prompt: { ...prompt, promptIds } });
      });
    }
    if (tries.length === 0) return samples;
    const hinted = await singleTurnRollout(
      context,
      tries.map((attempt) => attempt.prompt),
      // One completion per hinted prompt (their hinted batch is not repeated), a draw of its own.
      { ...settings, groupSize: 1, seed: settings.seed + 1 },
    );
    const chosen = new Map<number, number>(); // promptIndex → index into tries, lowest right level
    for (const [index, attempt] of tries.entries()) {
      if (chosen.has(attempt.promptIndex)) continue; // tries are in level order per prompt
      if (await solves(attempt.prompt.example, hinted[index].text)) chosen.set(attempt.promptIndex, index);
    }
    for (const [promptIndex, index] of chosen) {
      samples[promptIndex * G] = { ...hinted[index], promptIndex, promptIds: tries[index].prompt.promptIds };
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
  rollout: scafRollout({
    // GSM8K rows carry no hints: the reference solution's lines are the solution hints.
    hintParts: (example, column) =>
      column === 'solution_breakdown_parts'
        ? stringList(example[column]).length > 0
          ? stringList(example[column])
          : gsm8kReasoning(String(example.answer ?? ''))
              .split('\n')
              .map((line) => line.trim())
              .filter((line) => line !== '')
        : stringList(example[column]),
  }),
} satisfies Recipe;
