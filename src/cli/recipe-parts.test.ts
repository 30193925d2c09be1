/**
 * A recipe's own algorithm parts, end to end through `grpo train`: test/fixtures/recipes/own-parts.ts
 * (a file outside src/, as a user's recipe is) defines an advantage estimator and a policy loss with
 * their entries and lists them in `parts`; its config names them. The fixture's parts compute what
 * `dr-grpo` and `reinforce` compute, so the run must match, step for step and weight for weight, the
 * same run with those built-ins — and differ from the default grpo + ppo-clip run, so the comparison
 * could fail. Bad parts are refused when the recipe loads, naming the recipe and the part.
 */
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { advantageEstimators, policyLosses } from '../algorithms/index.js';
import { loadRecipe } from './recipe-file.js';
import { runTrainCommand } from './train-command.js';
import { testFixture } from '../../test/helpers/fixtures.js';

const scratch = mkdtempSync(join(tmpdir(), 'grpo-recipe-parts-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));
const recipe = testFixture('recipes/own-parts.ts');

const small = [
  'model.hiddenSize=32',
  'model.numLayers=1',
  'model.numHeads=2',
  'sft.steps=40',
  'grpo.steps=3',
  'grpo.promptsPerStep=4',
  'grpo.microBatchSize=16',
  'sampling.groupSize=4',
  'evaluation.examples=8',
  'checkpoint.every=0',
  `logging.runsDirectory=${JSON.stringify(scratch)}`,
];

/** The GRPO steps' metrics of a run, timing fields left out. */
function grpoMetrics(runName: string): Record<string, number>[] {
  return readFileSync(join(scratch, runName, 'metrics.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as Record<string, number | string>)
    .filter((metrics) => metrics.phase === 'grpo' && 'gradNorm' in metrics)
    .map(
      (metrics) =>
        Object.fromEntries(
          Object.entries(metrics).filter(
            ([key]) => ['reward/mean', 'gradNorm', 'loss/policy', 'loss/total'].includes(key) || key === 'step',
          ),
        ) as Record<string, number>,
    );
}

/** The bytes of the run's last checkpoint's weights. */
function lastWeights(runName: string): Buffer {
  const folder = join(scratch, runName, 'checkpoints');
  const last = readdirSync(folder)
    .filter((name) => name.startsWith('step-'))
    .sort((a, b) => Number(a.slice(5)) - Number(b.slice(5)))
    .at(-1)!;
  return readFileSync(join(folder, last, 'model.safetensors'));
}

describe("a recipe's own advantage estimator and policy loss", () => {
  it('train through grpo train exactly as the built-ins they re-implement', async () => {
    const calls = ((globalThis as { ownPartsCalls?: Record<string, number> }).ownPartsCalls ??= {});
    expect(await runTrainCommand({ recipe, set: small, runName: 'own', quiet: true })).toBe(0);
    expect(calls['mean-baseline']).toBe(3); // once per GRPO step
    expect(calls['on-policy-gradient']).toBeGreaterThanOrEqual(3);
    expect(advantageEstimators.has('mean-baseline') && policyLosses.has('on-policy-gradient')).toBe(true);

    const builtIns = ['algorithm.advantage=dr-grpo', 'algorithm.loss=reinforce'];
    expect(await runTrainCommand({ set: [...small, ...builtIns], runName: 'built-in', quiet: true })).toBe(0);
    expect(await runTrainCommand({ set: small, runName: 'default', quiet: true })).toBe(0);

    const own = grpoMetrics('own');
    expect(own).toHaveLength(3);
    expect(own.some((step) => step.gradNorm > 0)).toBe(true); // the steps moved the weights
    expect(own).toEqual(grpoMetrics('built-in'));
    expect(lastWeights('own').equals(lastWeights('built-in'))).toBe(true);
    expect(grpoMetrics('default')).not.toEqual(own);
    expect(lastWeights('default').equals(lastWeights('own'))).toBe(false);

    // --resume reloads the recorded recipe, so its parts are there again.
    expect(JSON.parse(readFileSync(join(scratch, 'own', 'source.json'), 'utf8')).recipe).toBe(recipe);
  });

  it('the same recipe file loads to the same parts again in one process, and trains again', async () => {
    // tsx's tsImport gives a fresh copy of a module on every call: without the cache by file, the second
    // load's parts were new functions under taken names, "already registered to a different function".
    const [first, second] = [await loadRecipe(recipe), await loadRecipe(recipe)];
    expect(first.parts?.length).toBe(2);
    first.parts!.forEach((part, i) => expect(second.parts![i]).toBe(part));
    expect(await runTrainCommand({ recipe, set: [...small, 'grpo.steps=1'], runName: 'own-again', quiet: true })).toBe(
      0,
    );
  });

  it('a bad part is refused when the recipe loads, naming the recipe and the part', async () => {
    let written = 0;
    let bad = '';
    // A new file each time: a loaded recipe is kept by its path (and size and time).
    const write = (parts: string) => {
      bad = join(scratch, `bad-parts-${written++}.mjs`);
      writeFileSync(bad, `export default { config: {}, parts: ${parts} };\n`);
    };
    write('{}');
    await expect(loadRecipe(bad)).rejects.toThrow(/recipe .*bad-parts-0\.mjs: its parts must be an array/);
    write('[{ kind: "advantage", name: "x", fn: () => 0, description: "d", citation: "c" }]');
    await expect(loadRecipe(bad)).rejects.toThrow(
      /parts\[0\] \("x"\): unknown kind "advantage"; known: advantage estimator, policy loss/,
    );
    write('[{ kind: "policy loss", name: "grpo-2", fn: 3, description: "d", citation: "c" }]');
    await expect(loadRecipe(bad)).rejects.toThrow(
      /parts\[0\] \("grpo-2"\): policy loss "grpo-2": fn must be a function/,
    );
    write('[{ kind: "policy loss", name: "ppo-clip", fn: () => 0, description: "d", citation: "c" }]');
    await expect(loadRecipe(bad)).rejects.toThrow(
      /policy loss "ppo-clip" is already registered to a different function/,
    );
    write('[{ kind: "prompt selector", name: "mine", fn: () => 0, description: "d", citation: "c" }]');
    await expect(loadRecipe(bad)).rejects.toThrow(/parts\[0\] \("mine"\): a prompt selector needs plan/);
    expect(existsSync(join(scratch, 'bad'))).toBe(false);
  });
});
