/**
 * recipes/papers/scaf-grpo.ts (Scaf-GRPO, #216): the hinted prompts as the authors'
 * `build_new_message` writes them, the rollout on a small random model made here (no hints during
 * the warm-up; after it, an all-wrong group gets its first completion replaced by the right hinted
 * completion of the lowest level, trained on its hinted prompt; a group with a right completion is
 * left alone), and `grpo train` with the recipe on the tinystories fixture and GSM8K rows.
 */
import { sharedData, tinyStoriesModel } from '../../test/helpers/fixtures.js';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CharTokenizer } from '../model/char-tokenizer.js';
import { createSmallConfig } from '../model/config.js';
import { Transformer } from '../model/transformer.js';
import type { RolloutContext, RolloutPrompt, RolloutSettings } from '../rollout/rollout.js';
import { hintContents, scafRollout } from '../../recipes/papers/scaf-grpo.js';
import { ANSWER_SYSTEM_PROMPT } from '../../recipes/papers/sage.js';
import { grpoStepRecords, inProcessCli, settingFlags } from '../../test/helpers/cli-in-process.js';

const root = new URL('../../', import.meta.url).pathname;
const fixture = tinyStoriesModel;
const { runs, grpo } = inProcessCli('grpo-scaf-recipe-');

describe('hintContents (their build_new_message)', () => {
  it('writes knowledge hints 1–4 then solution hints 1–4, cumulative, parts joined by spaces', () => {
    const parts: Record<string, string[]> = {
      knowledge_components_parts: ['K1.', 'K2.', 'K3.', 'K4.', 'K5.'],
      solution_breakdown_parts: ['S1.', 'S2.'],
    };
    const contents = hintContents('What is 2+2?', (column) => parts[column]);
    expect(contents).toEqual([
      'Question: What is 2+2?\nKnowledge Hints: K1.',
      'Question: What is 2+2?\nKnowledge Hints: K1. K2.',
      'Question: What is 2+2?\nKnowledge Hints: K1. K2. K3.',
      'Question: What is 2+2?\nKnowledge Hints: K1. K2. K3. K4.',
      'Question: What is 2+2?\nSolution Hints: S1.',
      'Question: What is 2+2?\nSolution Hints: S1. S2.',
      'Question: What is 2+2?\nSolution Hints: S1. S2.', // fewer than 4 parts: parts[:k] repeats them all
      'Question: What is 2+2?\nSolution Hints: S1. S2.',
    ]);
    expect(hintContents('q', (column) => (column === 'solution_breakdown_parts' ? ['S'] : []))).toHaveLength(4);
  });
});

describe('scafRollout on a small random model', () => {
  const tokenizer = new CharTokenizer();
  const model = Transformer.random(
    createSmallConfig({ vocabSize: tokenizer.vocabSize, hiddenSize: 16, numLayers: 1, numHeads: 2 }),
    3,
  );
  const context: RolloutContext = { model, tokenizer, chatTemplate: null };
  const settings: RolloutSettings = {
    groupSize: 3,
    maxNewTokens: 4,
    temperature: 1,
    topK: 0,
    topP: 1,
    minP: 0,
    stopTokenIds: [tokenizer.eosTokenId],
    seed: 11,
  };
  const rows = [
    { prompt: '1+1=', question: 'one plus one', answer: '2', solution_breakdown_parts: ['a', 'b'] },
    { prompt: '2+2=', question: 'two plus two', answer: '4', knowledge_components_parts: ['k1', 'k2'] },
    { prompt: '3+3=', question: 'three plus three', answer: '6', solution_breakdown_parts: ['c'] },
  ];
  const prompts: RolloutPrompt[] = rows.map((example) => ({ example, promptIds: tokenizer.encode(example.prompt) }));
  const format = (content: string) =>
    tokenizer.encode(`${ANSWER_SYSTEM_PROMPT}\n\n${content}`, { addSpecialTokens: true });
  it('hints nothing during the warm-up, then replaces the first completion of an all-wrong group', async () => {
    const judged: string[] = [];
    // Right: every completion of the first prompt; of the others, every completion judged after the
    // 2·G plain ones (the hinted tries), so the lowest level wins for each all-wrong group.
    const solves = (example: Record<string, unknown>, completion: string) =>
      example.prompt === '1+1=' || judged.push(completion) > 2 * settings.groupSize;
    const rollout = scafRollout({ warmupSteps: 1, solves });
    const warm = await rollout(context, prompts, settings);
    expect(warm.every((sample) => sample.promptIds === undefined)).toBe(true);
    expect(judged).toHaveLength(0); // nothing is judged in the warm-up
    const after = await rollout(context, prompts, settings);
    expect(after.slice(0, 3).every((sample) => sample.promptIds === undefined)).toBe(true); // had a right one
    expect(after[3].promptIds).toEqual(format('Question: two plus two\nKnowledge Hints: k1'));
    expect(after[6].promptIds).toEqual(format('Question: three plus three\nSolution Hints: c'));
    for (const index of [4, 5, 7, 8]) expect(after[index].promptIds).toBeUndefined(); // G − 1 left
    expect(after.map((sample) => sample.promptIndex)).toEqual([0, 0, 0, 1, 1, 1, 2, 2, 2]);
    expect(after[3].oldLogprobs).toHaveLength(after[3].completionIds.length);
  });

  it('counts the warm-up in GRPO steps when the rollout is told the step (refill rounds, a resumed run)', async () => {
    const judged: string[] = [];
    const solves = (_: Record<string, unknown>, completion: string) => (judged.push(completion), false);
    const rollout = scafRollout({ warmupSteps: 2, solves });
    for (const round of [0, 1, 2]) {
      await rollout(context, prompts, { ...settings, step: 1 }); // step 2 of 2 in the warm-up, 3 rounds
      expect(judged, `round ${round}`).toHaveLength(0);
    }
    // A resumed run's first call is already past the warm-up: the plain completions are judged.
    await scafRollout({ warmupSteps: 2, solves })(context, prompts, { ...settings, step: 2 });
    expect(judged.length).toBeGreaterThanOrEqual(3 * settings.groupSize);
  });

  it('keeps the group when no hinted completion is right', async () => {
    const never = (example: Record<string, unknown>) => example.prompt === '1+1=';
    const samples = await scafRollout({ warmupSteps: 0, solves: never })(context, prompts, settings);
    expect(samples.every((sample) => sample.promptIds === undefined)).toBe(true);
  });
});

describe('grpo train with the Scaf-GRPO rollout (tinystories fixture, GSM8K rows)', () => {
  const tiny = settingFlags({
    'taskOptions.dataDirectory': sharedData,
    'taskOptions.maxRows': 3,
    'grpo.examples': 3,
    'sft.steps': 0,
    'grpo.steps': 1,
    'grpo.promptsPerStep': 2,
    'grpo.microBatchSize': 8,
    'sampling.groupSize': 4,
    'sampling.maxNewTokens': 8,
    'evaluation.examples': 2,
    'checkpoint.every': 0,
    'logging.runsDirectory': runs,
  });

  it('runs the recipe as written (a step inside the 50-step warm-up)', async () => {
    await grpo('train', join(root, 'recipes/papers/scaf-grpo.ts'), '--model', fixture, '--run-name', 'scaf', ...tiny);
    const [step] = grpoStepRecords(runs, 'scaf');
    expect(Number.isFinite(step['loss/policy'])).toBe(true);
  });

  it('trains a replaced hinted completion through a real step (no warm-up, hinted tries counted right)', async () => {
    const recipe = join(runs, 'scaf-no-warmup.ts');
    writeFileSync(
      recipe,
      `import base, { scafRollout } from ${JSON.stringify(join(root, 'recipes/papers/scaf-grpo.ts'))};
const judged = [];
globalThis.scafJudged = judged;
export default {
  ...base,
  rollout: scafRollout({
    warmupSteps: 0,
    solves: (_example, completion) => judged.push(completion) > 8,
    hintParts: (_example, column) => (column === 'solution_breakdown_parts' ? ['Add them.', 'Then stop.'] : []),
  }),
};
`,
    );
    await grpo('train', recipe, '--model', fixture, '--run-name', 'scaf-hinted', ...tiny);
    const [step] = grpoStepRecords(runs, 'scaf-hinted');
    expect(Number.isFinite(step['loss/policy'])).toBe(true);
    // 2 groups × 4 plain completions (all wrong), then each group's level-1 hinted try (right: kept).
    expect((globalThis as { scafJudged?: string[] }).scafJudged).toHaveLength(10);
  });
});
