/**
 * A recipe outside any project (a folder with no node_modules/grpo and no tsconfig.json, as a user's
 * scratch file is) imports values from 'grpo' — here `extractFinalAnswer` and `answersMatch` for its
 * own reward — and trains with it through `grpo train`. The same recipe with 'grpo' misspelt fails
 * with Node's module-not-found error, so the mapping is what makes it load; a recipe inside a folder
 * with its own tsconfig.json is left to that project's resolution.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadRecipe, runTrainCommand } from './train-command.js';

const scratch = mkdtempSync(join(tmpdir(), 'grpo-recipe-outside-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const recipeText = (module: string) => `import { answersMatch, extractFinalAnswer } from '${module}';
export default {
  config: { grpo: { steps: 1, promptsPerStep: 2 }, sampling: { groupSize: 2 } },
  rewards: [
    {
      name: 'imported-answer',
      weight: 1,
      reward: ({ completion, row }: { completion: string; row: Record<string, unknown> }) => {
        const answer = extractFinalAnswer(completion)?.answer;
        return answer !== undefined && answersMatch(answer, String(row.answer)) ? 1 : 0;
      },
    },
  ],
};
`;

function writeRecipe(folder: string, module: string): string {
  mkdirSync(folder, { recursive: true });
  const file = join(folder, 'recipe.ts');
  writeFileSync(file, recipeText(module));
  return file;
}

describe('a recipe outside any project', () => {
  it("imports values from 'grpo' and trains with a reward built on them", async () => {
    const file = writeRecipe(join(scratch, 'plain'), 'grpo');
    const recipe = await loadRecipe(file);
    expect(recipe.rewards?.map((reward) => reward.name)).toEqual(['imported-answer']);
    const reward = recipe.rewards![0].reward as (input: never) => number | null | Promise<number | null>;
    const input = { completion: 'so the answer is 42', row: { answer: '42' } };
    expect(await reward(input as never)).toBe(1);
    expect(await reward({ ...input, completion: 'the answer is 41' } as never)).toBe(0);
    const code = await runTrainCommand({
      recipe: file,
      set: [
        'sft.steps=2',
        'model.hiddenSize=16',
        'model.numLayers=1',
        'model.numHeads=2',
        'evaluation.examples=4',
        'checkpoint.every=0',
        `logging.runsDirectory=${JSON.stringify(scratch)}`,
      ],
      runName: 'outside',
      quiet: true,
    });
    expect(code).toBe(0);
    const metrics = readFileSync(join(scratch, 'outside', 'metrics.jsonl'), 'utf8');
    expect(metrics).toContain('reward/imported-answer/mean');
  });

  it('fails as Node does for a module that does not exist, and leaves a project with a tsconfig alone', async () => {
    await expect(loadRecipe(writeRecipe(join(scratch, 'misspelt'), 'grpoo'))).rejects.toThrow(/grpoo/);
    const project = join(scratch, 'project');
    mkdirSync(project, { recursive: true });
    writeFileSync(join(project, 'tsconfig.json'), '{}');
    await expect(loadRecipe(writeRecipe(join(project, 'src'), 'grpo'))).rejects.toThrow(/Cannot find module 'grpo'/);
  });
});
