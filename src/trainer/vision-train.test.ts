/**
 * A vision-language model learning through `train()` in seconds: a tiny from-scratch Idefics3
 * model sees an all-red or all-blue image and must answer its colour, which the text alone cannot
 * tell (the prompt is the same for both), so a reward above one half needs the image. GRPO from
 * the random model must raise the mean reward and the held-out accuracy. The run's checkpoint is an
 * idefics3 folder that `grpo train` (model.checkpoint) detects and trains again, and the logged
 * samples name their images as PNG files in the run folder; a resumed run (weights, optimiser, KL
 * reference) ends with the weights of an uninterrupted one.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runTrainCommand } from '../cli/train-command.js';
import type { Example, Task } from '../data/index.js';
import { isIdefics3Checkpoint } from '../model/vision/idefics3-config.js';
import { loadVisionLanguageCheckpoint } from '../model/vision/vision-language-checkpoint.js';
import type { RewardFn } from '../rewards/types.js';
import { createRunContext, resolveConfig } from './setup.js';
import { train } from './trainer.js';

const scratch = mkdtempSync(join(tmpdir(), 'grpo-vision-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const RED = [220, 30, 30];
const BLUE = [30, 60, 230];

function colourRow(index: number): Example {
  const red = index % 2 === 0;
  const data = new Uint8Array(16 * 16 * 3);
  // A little per-row noise, so no two images are equal and the held-out ones are unseen.
  for (let i = 0; i < 16 * 16; i++)
    data.set(
      (red ? RED : BLUE).map((value, c) => value - ((index * 7 + i * 13 + c) % 20)),
      i * 3,
    );
  return { prompt: '<image>?', answer: red ? 'r' : 'b', images: [{ width: 16, height: 16, channels: 3, data }] };
}

const correct: RewardFn = ({ completion, row }) => (completion === row.answer ? 1 : 0);
const colourTask: Task = {
  name: 'colour',
  description: 'say the colour of an all-red or all-blue image',
  alphabet: 'rb?',
  trainExamples: (count) => Array.from({ length: count }, (_, i) => colourRow(i)),
  evalExamples: (count) => Array.from({ length: count }, (_, i) => colourRow(10_000 + i)),
  demonstration: (example) => String(example.answer),
  rewards: () => [{ name: 'correct', reward: correct, weight: 1 }],
  isCorrect: (example, completion) => completion === example.answer,
};

const config = {
  task: 'colour',
  seed: 1,
  model: {
    hiddenSize: 16,
    numLayers: 1,
    numHeads: 2,
    vision: { imageSize: 16, patchSize: 8, scaleFactor: 2, hiddenSize: 8, numLayers: 1, numHeads: 2 },
  },
  sft: { steps: 0 },
  sampling: { groupSize: 8, maxNewTokens: 1, temperature: 1 },
  grpo: { steps: 40, promptsPerStep: 8, microBatchSize: 32, learningRate: 0.01, examples: 64 },
  algorithm: { advantage: 'grpo', loss: 'ppo-clip', aggregation: 'token-mean', klCoefficient: 0 },
  evaluation: { examples: 32 },
  checkpoint: { every: 0 },
  logging: { samplesEvery: 10, samplesPerStep: 1 },
};

const readLines = (file: string) =>
  readFileSync(file, 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line));

describe('vision-language training end to end', () => {
  const runDirectory = join(scratch, 'colour');

  it('GRPO raises the reward and the held-out accuracy of a task only the image can answer', async () => {
    const context = createRunContext(resolveConfig(config, ['colour'], colourTask), { task: colourTask });
    const result = await train(context, { runDirectory, quiet: true });
    const rewards = readLines(join(runDirectory, 'metrics.jsonl'))
      .filter((m) => 'reward/mean' in m)
      .map((m) => m['reward/mean'] as number);
    const mean = (values: number[]) => values.reduce((a, b) => a + b, 0) / values.length;
    const first = mean(rewards.slice(0, 5));
    const last = mean(rewards.slice(-5));
    expect(first).toBeLessThan(0.5);
    expect(last).toBeGreaterThan(0.8); // above the 0.5 a policy blind to the image could reach
    expect(result.evalAfter!['eval/accuracy']).toBeGreaterThan(0.8);
    expect(result.evalAfter!['eval/accuracy']).toBeGreaterThan(result.evalBefore!['eval/accuracy'] + 0.3);
    const [sample] = readLines(join(runDirectory, 'samples.jsonl'));
    expect(sample.images).toEqual([`images/step-${sample.step}-0-0.png`]);
    expect(readFileSync(join(runDirectory, sample.images[0])).subarray(1, 4).toString()).toBe('PNG');
  });

  it('writes idefics3 checkpoints that grpo train detects and trains again', async () => {
    const checkpoint = join(runDirectory, 'checkpoints', 'step-40');
    expect(isIdefics3Checkpoint(checkpoint)).toBe(true);
    for (const file of ['model.safetensors', 'tokenizer.json', 'preprocessor_config.json'])
      expect(existsSync(join(checkpoint, file)), file).toBe(true);
    // The built-in shape-counting task (16-pixel images here), SFT then GRPO, on the saved folder.
    const set = [
      'task=shape-counting',
      `model.checkpoint=${JSON.stringify(checkpoint)}`,
      'sft.steps=1',
      'sft.batchSize=2',
      'grpo.steps=1',
      'grpo.promptsPerStep=2',
      'grpo.microBatchSize=8',
      'sampling.groupSize=4',
      'sampling.maxNewTokens=2',
      'evaluation.examples=2',
      'algorithm.klCoefficient=0.04', // the KL reference of a vision-language model: the whole model at GRPO start
      `logging.runsDirectory=${JSON.stringify(scratch)}`,
      'taskOptions={"imageSize":16}',
    ];
    expect(await runTrainCommand({ set, runName: 'again', quiet: true })).toBe(0);
    expect(isIdefics3Checkpoint(join(scratch, 'again', 'checkpoints', 'step-2'))).toBe(true);
  });

  it('resumes a vision-language run (weights, optimiser, KL reference) to the same weights as an uninterrupted one', async () => {
    const withKl = { ...config, algorithm: { ...config.algorithm, klCoefficient: 0.04 }, checkpoint: { every: 5 } };
    const run = (steps: number, directory: string, resume = false) => {
      const settings = { ...withKl, grpo: { ...withKl.grpo, steps } };
      const context = createRunContext(resolveConfig(settings, ['colour'], colourTask), { task: colourTask });
      return train(context, { runDirectory: join(scratch, directory), quiet: true, resume });
    };
    await run(8, 'straight');
    await run(5, 'resumed');
    await run(8, 'resumed', true);
    const weights = (directory: string) =>
      loadVisionLanguageCheckpoint(join(scratch, directory, 'checkpoints', 'step-8')).tensors;
    const straight = weights('straight');
    for (const [name, tensor] of weights('resumed')) expect(tensor.data, name).toEqual(straight.get(name)!.data);
  });

  it('an undecodable image stops the run before any compute, naming the phase, example and row', async () => {
    const broken: Task = {
      ...colourTask,
      trainExamples: (count) =>
        Array.from({ length: count }, (_, i) =>
          i === 3
            ? { ...colourRow(i), images: [new Uint8Array([1, 2, 3, 4])], imageOrigin: 'rows.jsonl line 4' }
            : colourRow(i),
        ),
    };
    const context = createRunContext(resolveConfig(config, ['colour'], broken), { task: broken });
    const runDirectory = join(scratch, 'broken');
    await expect(train(context, { runDirectory, quiet: true })).rejects.toThrow(
      /GRPO example 3 \(rows\.jsonl line 4\), image 0: the image could not be decoded/,
    );
    expect(existsSync(join(runDirectory, 'metrics.jsonl'))).toBe(false); // no step ran
  });
});
