/**
 * Flow image rewards are pluggable like text rewards: each built-in is one file under image-rewards/
 * with its entry on the shared registry; a recipe's own (`defineImageReward` in its `parts`) is
 * registered when the recipe loads, listed by `grpo list --recipe`, weighted by `flow.rl.rewards` and
 * scored in a `grpo train` run; what a run needs (a classifier) is read from the entries, not from names.
 */
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { buildProgram } from '../cli/main.js';
import { runListCommand } from '../cli/list-command.js';
import { testFixture } from '../../test/helpers/fixtures.js';
import { defineImageReward } from './image-reward.js';
import { imageRewards, registerImageReward, rewardsNeedClassifier, scoreImages } from './image-rewards.js';

const runs = mkdtempSync(join(tmpdir(), 'grpo-image-rewards-'));
afterAll(() => rmSync(runs, { recursive: true, force: true }));
let printed = '';
beforeAll(() => {
  vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => ((printed += String(chunk)), true));
  vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
});
afterAll(() => vi.restoreAllMocks());
const grpo = (...argv: string[]) =>
  buildProgram()
    .exitOverride()
    .parseAsync(['node', 'grpo', ...argv]);
const recipe = testFixture('recipes/own-image-reward.ts');

describe('image rewards', () => {
  it('has each built-in in its own file under image-rewards/, registered by name', () => {
    const files = readdirSync(join(import.meta.dirname, 'image-rewards')).map((file) => file.replace(/\.ts$/, ''));
    expect(imageRewards.names().slice(0, 6).sort()).toEqual(files.filter((file) => !file.endsWith('.test')).sort());
  });

  it('reads whether a classifier is needed from the entries, so a new learned reward needs no name switch', () => {
    const learned = defineImageReward({
      name: 'test-learned-score',
      description: 'd',
      citation: 'c',
      needsClassifier: true,
      score: ({ images }) => new Float32Array(images.length),
    });
    registerImageReward(learned);
    expect(rewardsNeedClassifier({ 'test-learned-score': 1 })).toBe(true);
    expect(rewardsNeedClassifier({ confidence: 1 })).toBe(true);
    expect(rewardsNeedClassifier({ thickness: 1, symmetry: 0 })).toBe(false);
    expect(() => scoreImages([new Float32Array(4)], [0], 2, { 'test-learned-score': 1 }, null)).toThrow(
      /rewards.test-learned-score: needs a digit classifier/,
    );
  });

  it('refuses a reward whose scores cannot be used, naming it', () => {
    const images = [new Float32Array(4), new Float32Array(4)];
    registerImageReward(
      defineImageReward({ name: 'test-short', description: 'd', citation: 'c', score: () => new Float32Array(1) }),
    );
    registerImageReward(
      defineImageReward({ name: 'test-nan', description: 'd', citation: 'c', score: () => Float32Array.of(0, NaN) }),
    );
    expect(() => scoreImages(images, [0, 1], 2, { 'test-short': 1 }, null)).toThrow(
      /"test-short": returned 1 scores for 2/,
    );
    expect(() => scoreImages(images, [0, 1], 2, { 'test-nan': 1 }, null)).toThrow(/"test-nan": score NaN for image 1/);
    expect(() => registerImageReward({ ...defineImageReward({ name: 'test-bad', description: 'd', citation: 'c', score: () => new Float32Array() }), score: 3 } as never, 'parts[0]')).toThrow(/parts\[0\]: an image reward needs score/); // prettier-ignore
    const other = defineImageReward({
      name: 'thickness',
      description: 'd',
      citation: 'c',
      score: () => new Float32Array(),
    });
    expect(() => registerImageReward(other, 'parts[1]')).toThrow(
      /parts\[1\]: image reward "thickness" is already registered/,
    );
  });

  it("a recipe's own image reward is scored in a grpo train run and listed by grpo list", async () => {
    const calls = ((globalThis as { ownImageRewardCalls?: number[] }).ownImageRewardCalls ??= []);
    calls.length = 0;
    const sets = {
      'logging.runsDirectory': runs,
      'flow.pretrain.steps': 4,
      'flow.pretrain.hiddenSize': 8,
      'flow.pretrain.numBlocks': 1,
      'flow.pretrain.imageSize': 7,
      'flow.rl.steps': 1,
      'flow.rl.groupSize': 2,
      'flow.rl.promptsPerStep': 2,
      'flow.rl.samplingSteps': 2,
      'flow.rl.evalEvery': 1,
      'flow.rl.evalPerClass': 1,
    };
    const argv = Object.entries(sets).flatMap(([key, value]) => ['--set', `${key}=${JSON.stringify(value)}`]);
    await grpo('train', recipe, '--run-name', 'own', ...argv);
    expect(calls.length).toBeGreaterThan(0); // the recipe's function scored the rollouts and evaluations
    const lines = readFileSync(join(runs, 'own', 'metrics.jsonl'), 'utf8')
      .trim()
      .split('\n');
    const evaluation = lines.map((line) => JSON.parse(line)).find((line) => 'eval/reward/top-ink/mean' in line);
    expect(evaluation['eval/reward/top-ink/mean']).toBeGreaterThan(0);
    expect(existsSync(join(runs, 'own', 'classifier'))).toBe(false); // no entry needs one: none trained
    // grpo list (here in the same process as the run, so the recipe is not imported a second time) shows it.
    expect(runListCommand()).toMatch(/^ {2}top-ink +share of the image's ink in its top half/m);
  }, 120_000);

  it('grpo list --recipe loads the recipe first, so its parts are listed; an unknown name lists the known ones', async () => {
    // A recipe's image reward named in flow.rl.rewards but missing from its parts is refused before compute.
    await expect(grpo('train', 'recipes/flow-grpo.ts', '--set', 'flow.rl.rewards={"top-inkk":1}', '--set', `logging.runsDirectory=${runs}`)).rejects.toThrow(/flow.rl: rewards.top-inkk: unknown image reward; known: confidence, .*top-ink/); // prettier-ignore
    printed = '';
    await grpo('list', '--recipe', 'recipes/flow-grpo.ts');
    expect(printed).toMatch(/^Image rewards, flow.rl.rewards \(\d+\)/m);
    await expect(grpo('list', '--recipe', join(runs, 'nope.ts'))).rejects.toThrow(/nope.ts does not exist/);
  }, 120_000);
});
