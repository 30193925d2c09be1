/**
 * A recipe outside any project (a folder with no node_modules/grpo and no tsconfig.json, as a user's
 * scratch file is) imports values from 'grpo' — here `extractFinalAnswer` and `answersMatch` for its
 * own reward — and trains with it through `grpo train`. The same recipe with 'grpo' misspelt fails
 * with Node's module-not-found error, so the mapping is what makes it load; a recipe inside a folder
 * with its own tsconfig.json is left to that project's resolution. Relative input paths in a recipe
 * are read from the recipe's folder.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadRecipe } from './recipe-file.js';
import { runTrainCommand } from './train-command.js';

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

describe("a recipe's paths", () => {
  it('are read from its folder, wherever grpo runs; flags and absolute paths are left as they are', async () => {
    const folder = join(scratch, 'relative');
    mkdirSync(join(folder, 'data'), { recursive: true });
    writeFileSync(
      join(folder, 'data', 'train.jsonl'),
      Array.from({ length: 24 }, (_, i) => JSON.stringify({ prompt: `${i}+1=`, answer: String(i + 1) })).join('\n'),
    );
    const config = {
      task: 'dataset',
      taskOptions: {
        trainFile: 'data/train.jsonl',
        evalFile: '/absolute/eval.jsonl',
        rewards: [{ name: 'math-answer' }],
      },
      model: { chatTemplate: 'none' },
      logging: { runsDirectory: 'runs' },
    };
    writeFileSync(join(folder, 'recipe.json'), JSON.stringify(config));
    const loaded = (await loadRecipe(join(folder, 'recipe.json'))).config as typeof config;
    expect(loaded.taskOptions.trainFile).toBe(join(folder, 'data', 'train.jsonl'));
    expect(loaded.taskOptions.evalFile).toBe('/absolute/eval.jsonl');
    expect(loaded.model.chatTemplate).toBe('none');
    expect(loaded.logging.runsDirectory).toBe('runs');
    // The working directory of this test is the repository: the file is found only from the recipe's folder.
    writeFileSync(
      join(folder, 'train.json'),
      JSON.stringify({ ...config, taskOptions: { trainFile: 'data/train.jsonl', rewards: [{ name: 'math-answer' }] } }),
    );
    const code = await runTrainCommand({
      recipe: join(folder, 'train.json'),
      set: [
        'sft.steps=0',
        'grpo.steps=1',
        'grpo.promptsPerStep=2',
        'sampling.groupSize=2',
        'sampling.maxNewTokens=4',
        'model.hiddenSize=16',
        'model.numLayers=1',
        'model.numHeads=2',
        'evaluation.examples=2',
        'checkpoint.every=0',
        `logging.runsDirectory=${JSON.stringify(scratch)}`,
      ],
      runName: 'relative',
      quiet: true,
    });
    expect(code).toBe(0);
    const written = JSON.parse(readFileSync(join(scratch, 'relative', 'config.json'), 'utf8'));
    expect(written.taskOptions.trainFile).toBe(join(folder, 'data', 'train.jsonl'));
  });
});
