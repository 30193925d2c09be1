/**
 * MatchTIR's recipe (#134, recipes/papers/matchtir.ts) end to end through `grpo train` at a tiny
 * size: SFT on the teacher's whole episodes, then two GRPO steps of multi-turn calculator episodes
 * whose calls are matched against the row's reference calls, with the `matchtir` turn credit. The
 * teacher's episodes replayed through the recipe's environment: each call of the right product
 * scores 1; a call of another expression scores 2/3 (name and parameter name right, value wrong,
 * the authors' `tool_similarity`). The answer reward is the authors' word-set F1.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { grpoStepRecords, inProcessCli, tinyRunFlags } from '../../test/helpers/cli-in-process.js';

const root = new URL('../../', import.meta.url).pathname;
const recipe = join(root, 'recipes/papers/matchtir.ts');
const { runs, grpo } = inProcessCli('grpo-matchtir-');

describe('recipes/papers/matchtir.ts', () => {
  it('runs SFT and two GRPO steps of matched-call episodes with matchtir turn credit through grpo train', async () => {
    await grpo('train', recipe, '--run-name', 'matchtir', ...tinyRunFlags(runs, { 'grpo.microBatchSize': 8 }));
    const steps = grpoStepRecords(runs, 'matchtir');
    expect(steps).toHaveLength(2);
    for (const step of steps) {
      expect(step['reward/answer-f1/invalid']).toBe(0);
      expect(Number.isFinite(step['loss/policy'])).toBe(true);
      expect(Number.isFinite(step['turnCredit/credit/turnAdvantage/absMean'])).toBe(true);
    }
    const config = JSON.parse(readFileSync(join(runs, 'matchtir', 'config.json'), 'utf8'));
    expect(config.algorithm.turnCredit).toEqual({ name: 'matchtir', options: { gamma: 0.9 } });
    expect(config.algorithm).toMatchObject({ klCoefficient: 0.001, klEstimator: 'k3', entropyCoefficient: 0.001 });
  });

  it("scores the teacher's calls against the reference calls, one reward per call", async () => {
    const { default: loaded, task } = await import(recipe);
    const rows = task.trainExamples(20, 3);
    for (const row of rows) {
      expect(row.toolCalls).toHaveLength(2);
      const environment = await loaded.environment(row, { seed: 0, episodeIndex: 0 });
      const [first, second] = row.products as string[];
      const call = (expression: string) => ({
        name: 'c',
        arguments: { e: expression },
        turn: 0,
        result: '',
        milliseconds: 0,
      });
      // Both right (in any order), one of them repeated: the repeat has no reference left, so 0.
      expect(await environment.scoreToolCalls([call(second), call(first), call(first)])).toEqual([1, 1, 0]);
      // A wrong expression matches a free reference at (1 + 1 + 0) / (2 + 1).
      const scored = await environment.scoreToolCalls([call('1*1'), call(first)]);
      expect(scored[0]).toBeCloseTo(2 / 3, 12);
      expect(scored[1]).toBe(1);
    }
  });

  it("the answer reward is the word-set F1 of the <answer> text (the authors' compute_answer_f1)", async () => {
    const { answerF1 } = await import(recipe);
    expect(answerF1('<answer>5535 5963</answer>', '5535 5963')).toBe(1);
    expect(answerF1('<answer>5963, 5535.</answer>', '5535 5963')).toBe(1); // sets, punctuation dropped
    expect(answerF1('<answer>5535 1</answer>', '5535 5963')).toBeCloseTo(0.5, 12); // P = R = 1/2
    expect(answerF1('<answer>5535</answer>', '5535 5963')).toBeCloseTo(2 / 3, 12); // P = 1, R = 1/2
    expect(answerF1('5535 5963', '5535 5963')).toBe(0); // no answer tag
  });
});
