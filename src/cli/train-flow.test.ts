/**
 * The three flow recipes (recipes/flow-*.ts) run end to end through `grpo train` at a tiny size:
 * pretrain writes the model, its classifier and metrics; flow-grpo starts from that checkpoint; flow-nft
 * pre-trains its own start. Every field a flow recipe offers is refused before compute when it
 * cannot run, naming the field.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { inProcessCli, settingFlags } from '../../test/helpers/cli-in-process.js';

const { runs, grpo } = inProcessCli('grpo-flow-recipes-');

const tinyPretrain = settingFlags({
  'flow.pretrain.steps': 12,
  'flow.pretrain.hiddenSize': 8,
  'flow.pretrain.numBlocks': 1,
  'flow.pretrain.imageSize': 7,
  'flow.classifierTraining.epochs': 1,
});
const tinyRl = settingFlags({
  'flow.rl.steps': 2,
  'flow.rl.groupSize': 2,
  'flow.rl.promptsPerStep': 2,
  'flow.rl.samplingSteps': 3,
  'flow.rl.evalEvery': 1,
  'flow.rl.evalPerClass': 1,
});
const readLines = (file: string) =>
  readFileSync(file, 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as Record<string, unknown>);
const runsDirectory = ['--set', `logging.runsDirectory=${runs}`];

describe('flow recipes through grpo train', () => {
  it('flow-pretrain → flow-grpo from its checkpoint; flow-nft pre-trains its own start', async () => {
    await grpo('train', 'recipes/flow-pretrain.ts', ...runsDirectory, '--run-name', 'pretrain', ...tinyPretrain);
    const pretrain = join(runs, 'pretrain');
    for (const file of ['model/model.safetensors', 'model/samples.png', 'classifier/model.safetensors', 'config.json'])
      expect(existsSync(join(pretrain, file)), file).toBe(true);
    const losses = readLines(join(pretrain, 'metrics.jsonl'));
    expect(losses.map((line) => line.step)).toEqual([1, 11, 12]);
    expect(losses.every((line) => Number.isFinite(line['loss/flowMatching']))).toBe(true);
    expect(JSON.parse(readFileSync(join(pretrain, 'summary.json'), 'utf8')).status).toBe('finished');

    await grpo('train', 'recipes/flow-grpo.ts', ...runsDirectory, '--run-name', 'grpo', '--model', join(pretrain, 'model'),
      '--set', `flow.classifier=${join(pretrain, 'classifier')}`, '--set', 'flow.rl.klCoefficient=0.04', ...tinyRl); // prettier-ignore
    const grpoRun = join(runs, 'grpo');
    expect(existsSync(join(grpoRun, 'pretrained')), 'no second pre-training').toBe(false);
    expect(existsSync(join(grpoRun, 'classifier')), 'the given classifier is used').toBe(false);
    const recipe = JSON.parse(readFileSync(join(grpoRun, 'config.json'), 'utf8'));
    expect(recipe.flow.rl).toMatchObject({ algorithm: 'flow-grpo', sampler: 'sde', steps: 2, learningRate: 5e-4 });
    const lines = readLines(join(grpoRun, 'metrics.jsonl'));
    const stepLines = lines.filter((line) => 'reward/thickness/mean' in line);
    expect(stepLines.map((line) => line.step)).toEqual([1, 2]);
    expect(stepLines.map((line) => line['loss/kl'])).toEqual([0, expect.any(Number)]); // the KL term is on
    for (const step of [0, 1, 2]) expect(existsSync(join(grpoRun, `samples-step-${step}.png`))).toBe(true);
    const summary = JSON.parse(readFileSync(join(grpoRun, 'summary.json'), 'utf8'));
    expect(summary.status).toBe('finished');
    expect(Number.isFinite(summary.evalAfter['eval/reward/mean'])).toBe(true);

    await grpo('train', 'recipes/flow-nft.ts', ...runsDirectory, '--run-name', 'nft', ...tinyPretrain, ...tinyRl);
    const nftRun = join(runs, 'nft');
    for (const file of ['pretrained/model.safetensors', 'classifier/model.safetensors', 'model/model.safetensors'])
      expect(existsSync(join(nftRun, file)), file).toBe(true);
    expect(JSON.parse(readFileSync(join(nftRun, 'config.json'), 'utf8')).flow.rl.algorithm).toBe('nft');
    const nftMetrics = readFileSync(join(nftRun, 'metrics.jsonl'), 'utf8');
    expect(readLines(join(nftRun, 'metrics.jsonl')).filter((line) => 'loss/policy' in line).length).toBe(2);
    // A finished run resumed: nothing to do, as for text runs; it stays finished with the same logs.
    await grpo('train', '--resume', nftRun);
    expect(readFileSync(join(nftRun, 'metrics.jsonl'), 'utf8')).toBe(nftMetrics);
    expect(JSON.parse(readFileSync(join(nftRun, 'summary.json'), 'utf8')).status).toBe('finished');
  }, 120_000);

  it('refuses what cannot run before any compute, naming the field or flag', async () => {
    // Tiny sizes first, so a refusal that went missing would cost seconds, not a default-sized run.
    const train = (...argv: string[]) => {
      const start = argv.some((arg) => arg.includes('flow.model') || arg === '--model') ? [] : tinyPretrain;
      return grpo(
        'train',
        'recipes/flow-grpo.ts',
        ...runsDirectory,
        '--run-name',
        'never',
        ...start,
        ...tinyRl,
        ...argv,
      );
    };
    const refusals: [string[], RegExp][] = [
      [settingFlags({ 'flow.rl.stepz': 2 }), /flow.rl: not a setting of a flow recipe: stepz/],
      [settingFlags({ 'flow.rl.steps': 'many' }), /flow.rl.steps: .*number/],
      [settingFlags({ 'flow.rl.steps': 0 }), /flow.rl.steps must be a positive integer/],
      [settingFlags({ 'flow.rl.sampler': 'ode' }), /flow.rl.sampler must be a stochastic step/],
      [settingFlags({ 'flow.rl.rewards': { boldness: 1 } }), /flow.rl.rewards.boldness: unknown image reward/],
      [settingFlags({ 'flow.rl.advantageEstimator': 'nope' }), /flow.rl: .*nope/],
      // Text-only estimators need what an image rollout has not (token ids, clusters, baselines, serial exits).
      ...['tree', 'single-stream', 'seed-grpo', 's-grpo', 'stratified', 'gdpo'].map((name): [string[], RegExp] => [
        settingFlags({ 'flow.rl.advantageEstimator': name }),
        new RegExp(`^flow\\.rl\\.advantageEstimator: "${name}" needs .* which a flow run does not supply`),
      ]),
      [settingFlags({ "flow.rl.window": { size: 4 } }), /flow.rl.window.size 4 is larger than the 3 sampler steps/],
      [settingFlags({ 'flow.rl.window': { size: 2, strid: 1 } }), /flow.rl.window: not a setting .*strid/],
      [settingFlags({ 'flow.rl.timestepSelection': 'dance', 'flow.rl.algorithm': 'nft' }), /flow.rl.timestepSelection "dance" applies to flow-grpo only/],
      [settingFlags({ 'flow.pretrain.imageSize': 5 }), /flow.pretrain.imageSize must divide 28/],
      [settingFlags({ 'flow.classifierTraining.epochs': 0.5 }), /flow.classifierTraining.epochs: must be a positive integer/],
      [settingFlags({ 'flow.classifier': '/nonexistent' }), /flow.classifierTraining: unused, flow.classifier is given/],
      [settingFlags({ 'flow.model': '/nonexistent', 'flow.pretrain.steps': 3 }), /flow.pretrain: unused, flow.model is given/],
      [['--model', '/nonexistent'], /config.json is missing/],
      [settingFlags({ 'flow.job': 'sample' }), /flow.job: /],
      [settingFlags({ 'grpo.steps': 3 }), /not a setting of a flow recipe: grpo/],
      [settingFlags({ 'checkpoint.every': -1 }), /checkpoint.every: must be a whole number ≥ 0/],
      [settingFlags({ 'checkpoint.keepLast': 0 }), /checkpoint.keepLast: must be a positive integer/],
      [settingFlags({ 'checkpoint.evry': 1 }), /checkpoint: not a setting of a flow recipe: evry/],
      [['--preset', 'dapo'], /not a setting of a flow recipe: preset/],
      [['--lora-rank', '4'], /not a setting of a flow recipe: lora/],
    ]; // prettier-ignore
    for (const [argv, error] of refusals) await expect(train(...argv), argv.join(' ')).rejects.toThrow(error);
    await expect(
      grpo('train', 'recipes/flow-pretrain.ts', ...runsDirectory, ...settingFlags({ 'flow.rl.steps': 3 })),
    ).rejects.toThrow(/flow.rl: only a job "rl" takes it/);
    await expect(grpo('sft', 'recipes/flow-grpo.ts', ...runsDirectory)).rejects.toThrow(/no SFT phase/);
    // A flow run folder of an older version (recipe.json, no checkpoints) is named as such, not misread as a text run.
    const older = join(runs, 'older');
    mkdirSync(older);
    writeFileSync(join(older, 'recipe.json'), '{}');
    writeFileSync(join(older, 'config.json'), '{"algorithm":"nft"}');
    await expect(grpo('train', '--resume', older)).rejects.toThrow(/a flow run of an older version \(recipe.json\)/);
    expect(existsSync(join(runs, 'never'))).toBe(false);
  });

  it("--set flow.rl.rewards replaces the recipe's rewards (the value at the path, as --set does everywhere)", async () => {
    // The recipe has { confidence: 1, thickness: 1 }; replaced by { thickness: 1 } no reward needs a classifier,
    // so asking to train one is refused before compute. Merged, confidence would stay and the run would train.
    const argv = [
      'train',
      'recipes/flow-grpo.ts',
      ...runsDirectory,
      '--run-name',
      'replaced',
      ...tinyPretrain,
      ...tinyRl,
    ];
    await expect(grpo(...argv, ...settingFlags({ 'flow.rl.rewards': { thickness: 1 } }))).rejects.toThrow(
      /flow.classifierTraining: unused, no reward needs a classifier/,
    );
    expect(existsSync(join(runs, 'replaced'))).toBe(false);
  });
});
