/*
 * loadRecipe's refusals: a recipe whose export, config or file content is not an object, and a
 * JSON/YAML file that does not parse, each fail naming the file instead of running the default
 * config. The .ts files are written outside any ESM package, where tsx loads them as CommonJS.
 * Not here: the training run itself (src/trainer tests).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadRecipe } from './train-command.js';

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
