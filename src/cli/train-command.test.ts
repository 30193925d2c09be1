/*
 * loadRecipe's refusals: a recipe whose export, config or file content is not an object, and a
 * JSON/YAML file that does not parse, each fail naming the file instead of running the default
 * config. The .ts files are written outside any ESM package, where tsx loads them as CommonJS.
 * applyOverrides: each --set replaces the value at its path and keeps the fields beside it. A
 * recipe's own task names the run's task (config.json says which task ran), and a config naming
 * another task is refused before anything loads.
 * Not here: the training run itself (src/trainer tests).
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadRecipe } from './recipe-file.js';
import { applyOverrides, runTrainCommand } from './train-command.js';

const folder = mkdtempSync(join(tmpdir(), 'grpo-recipe-'));
const recipeFile = (name: string, text: string): string => {
  writeFileSync(join(folder, name), text);
  return join(folder, name);
};

afterAll(() => rmSync(folder, { recursive: true, force: true }));

describe('loadRecipe', () => {
  it.each([
    // [file name, content, what the error says after the path]
    ['number.ts', 'export default 42;\n', 'not the number 42'],
    ['array.ts', 'export default [];\n', 'not an array'],
    ['null.mjs', 'export default null;\n', 'not null'],
    ['config-number.ts', 'export default { config: 42 };\n', 'its config must be an object, not the number 42'],
    ['rewards-object.mjs', 'export default { config: {}, rewards: {} };\n', 'its rewards must be an array'],
    ['task-number.mjs', 'export default { config: {}, task: 3 };\n', 'its task must be an object (a Task)'],
    ['task-nameless.mjs', 'export default { config: {}, task: {} };\n', 'its task needs a name'],
    [
      'task-no-check.mjs',
      'const f = () => [];\nexport default { config: {}, task: { name: "t", trainExamples: f, evalExamples: f, rewards: f } };\n',
      'its task "t" needs isCorrect, a function (row, completion) => boolean',
    ],
    ['number.json', '42\n', 'must hold a config object (field: value pairs), not the number 42'],
    ['array.json', '[]\n', 'not an array'],
    ['null.json', 'null\n', 'not null'],
    ['list.yaml', '- 1\n', 'not an array'],
    ['null.yaml', 'null\n', 'not null'],
    ['broken.json', '{"grpo": \n', 'is not valid JSON'],
    ['broken.yaml', 'grpo: [1,\n', 'is not valid YAML'],
  ])('refuses %s naming the file', async (name, text, message) => {
    const path = recipeFile(name, text);
    await expect(loadRecipe(path)).rejects.toThrow(path);
    await expect(loadRecipe(path)).rejects.toThrow(message);
  });

  it('reads config objects from every kind of file (an empty YAML file is no settings)', async () => {
    const config = { grpo: { steps: 3 } };
    expect(await loadRecipe(recipeFile('good.ts', `export default { config: ${JSON.stringify(config)} };\n`))).toEqual({
      config,
    });
    expect(await loadRecipe(recipeFile('bare.mjs', `export default ${JSON.stringify(config)};\n`))).toEqual({ config });
    expect(
      await loadRecipe(recipeFile('named.mjs', `export const recipe = { config: ${JSON.stringify(config)} };\n`)),
    ).toEqual({ config });
    expect(await loadRecipe(recipeFile('good.json', JSON.stringify(config)))).toEqual({ config });
    expect(await loadRecipe(recipeFile('good.yaml', 'grpo:\n  steps: 3\n'))).toEqual({ config });
    expect(await loadRecipe(recipeFile('empty.yaml', '# nothing set\n'))).toEqual({ config: {} });
  });
});

describe('applyOverrides (--set)', () => {
  const recipe = {
    grpo: { steps: 100, promptsPerStep: 4 },
    algorithm: { loss: 'ppo-clip', lossOptions: { epsilonLow: 0.2, epsilonHigh: 0.28 } },
    flow: { rl: { rewards: { confidence: 1, thickness: 1 }, steps: 60 } },
  };
  it("replaces the value at its path, record-valued fields included (never merged into the recipe's)", () => {
    const result = applyOverrides(recipe, [
      'flow.rl.rewards={"thickness":2}', // a record: the recipe's confidence reward is gone
      'algorithm.lossOptions={"epsilonHigh":0.3}', // the same rule for the text config's option records
      'grpo.steps=5', // a scalar: the fields beside it stay
      'logging.runName=x', // a new section
    ]);
    expect(result).toEqual({
      grpo: { steps: 5, promptsPerStep: 4 },
      algorithm: { loss: 'ppo-clip', lossOptions: { epsilonHigh: 0.3 } },
      flow: { rl: { rewards: { thickness: 2 }, steps: 60 } },
      logging: { runName: 'x' },
    });
    expect(recipe.flow.rl.rewards).toEqual({ confidence: 1, thickness: 1 }); // the recipe is not changed
  });
  it('later assignments win, and a deeper one edits what an earlier one set', () => {
    expect(applyOverrides({}, ['a.b={"c":1,"d":2}', 'a.b.d=3', 'e=not json'])).toEqual({
      a: { b: { c: 1, d: 3 } },
      e: 'not json',
    });
    expect(() => applyOverrides({}, ['=1'])).toThrow(/--set =1: expected key.path=value/);
  });
});

describe("a recipe's own task", () => {
  const rows = JSON.stringify([
    { prompt: '1+1=', answer: '2' },
    { prompt: '2+2=', answer: '4' },
  ]);
  const recipe = (config: Record<string, unknown>) =>
    recipeFile(
      `own-task-${Object.keys(config).length}.mjs`,
      `const rows = () => ${rows};
export default {
  config: ${JSON.stringify({ sft: { steps: 0 }, grpo: { steps: 0 }, evaluation: { examples: 2 }, logging: { runsDirectory: folder }, ...config })},
  task: { name: 'sums', description: '', alphabet: '0123456789+=', trainExamples: rows, evalExamples: rows,
    demonstration: (row) => row.answer, rewards: () => [{ name: 'one', weight: 1, reward: () => 1 }],
    isCorrect: (row, completion) => completion === row.answer },
};
`,
    );

  it("names the run's task in config.json when the config names none", async () => {
    expect(await runTrainCommand({ recipe: recipe({}), runName: 'own-task', quiet: true })).toBe(0);
    expect(JSON.parse(readFileSync(join(folder, 'own-task', 'config.json'), 'utf8')).task).toBe('sums');
  });

  it('is refused, naming task, when the config names another one', async () => {
    const attempt = runTrainCommand({ recipe: recipe({ task: 'addition' }), runName: 'other-task', quiet: true });
    await expect(attempt).rejects.toThrow(
      /^task: the config names task "addition" but the recipe's own task is "sums"/,
    );
    expect(existsSync(join(folder, 'other-task'))).toBe(false);
  });
});
