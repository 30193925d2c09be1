/**
 * R1-AQA's recipe (#36, recipes/papers/r1-aqa.ts): the rewards as the authors' src/utils/rewards.py,
 * the prompt as their dataset.py, the generated sounds and their spectrograms, and SFT then GRPO
 * through `grpo train` at a tiny size.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { seededPick } from '../rewards/stealthrl.js';
import type { RewardFn } from '../rewards/types.js';
import recipe, { r1AqaFormat, r1AqaTask, spectrogramImage, synthesize } from '../../recipes/papers/r1-aqa.js';
import { runTrainCommand } from './train-command.js';

const scratch = mkdtempSync(join(tmpdir(), 'grpo-r1-aqa-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** The brightest row (0 = highest band) of a spectrogram column. */
const loudestBand = (image: { data: Uint8Array }, frame: number): number => {
  let best = 0;
  for (let row = 1; row < 16; row++)
    if (image.data[(row * 16 + frame) * 3] > image.data[(best * 16 + frame) * 3]) best = row;
  return best;
};

describe('R1-AQA rewards and rows', () => {
  const reward = (name: string) => r1AqaTask.rewards().find((entry) => entry.name === name)!.reward as RewardFn;
  const score = (name: string, completion: string, answer: string) =>
    reward(name)({
      prompt: '',
      completion,
      completionIds: [],
      row: { answer },
      group: [completion],
      indexInGroup: 0,
      step: 0,
    });

  it('format_reward: the whole completion fullmatches <answer>.*?</answer> (DOTALL, not stripped)', () => {
    expect(r1AqaFormat('<answer>two beeps</answer>')).toBe(1);
    expect(r1AqaFormat('<answer>two\nbeeps</answer>')).toBe(1); // DOTALL
    expect(r1AqaFormat(' <answer>two beeps</answer>')).toBe(0); // no strip
    expect(r1AqaFormat('<think>x</think><answer>static</answer>')).toBe(0);
    expect(r1AqaFormat('<answer>static</answer>.')).toBe(0);
  });

  it('accuracy_reward: the first one-line <answer> of completion and solution, stripped, equal', () => {
    const solution = '<answer>a rising chirp</answer>'; // dataset.py: f"<answer>{answer_str}</answer>"
    expect(score('accuracy', '<answer> a rising chirp </answer>', solution)).toBe(1);
    expect(score('accuracy', '<answer>a falling chirp</answer>', solution)).toBe(0);
    expect(score('accuracy', 'a rising chirp', solution)).toBe(1); // untagged: the whole completion
    expect(score('accuracy', '<answer>a rising\nchirp</answer>', solution)).toBe(0); // one line only
    expect(score('accuracy', '<answer>A rising chirp</answer>', solution)).toBe(0); // case matters
  });

  it("rows: the authors' prompt with Python's list of four options, the sound and its look-alike among them", () => {
    for (const row of [...r1AqaTask.trainExamples(40, 1), ...r1AqaTask.evalExamples(10, 1)]) {
      const match =
        /^<image>What happened in the audio\? Please choose the answer from the following options: \['([^']+)', '([^']+)', '([^']+)', '([^']+)'\]\. Output the final answer in <answer> <\/answer>\.$/.exec(
          String(row.prompt),
        );
      expect(match).not.toBeNull();
      const options = match!.slice(1);
      expect(new Set(options).size).toBe(4);
      expect(options).toContain(row.sound);
      expect(row.answer).toBe(`<answer>${String(row.sound)}</answer>`);
      const mistake = r1AqaTask.demonstration(row, () => 0);
      expect(options).toContain(/<answer>(.*)<\/answer>/.exec(mistake)?.[1]);
      expect(r1AqaTask.isCorrect(row, mistake)).toBe(false);
      expect(
        r1AqaTask.isCorrect(
          row,
          r1AqaTask.demonstration(row, () => 0.99),
        ),
      ).toBe(true);
    }
  });

  it('spectrograms: a chirp climbs or falls through the bands, two beeps leave a silent gap, static fills every band', () => {
    const pick = seededPick(7);
    const rising = spectrogramImage(synthesize('a rising chirp', pick));
    expect(loudestBand(rising, 0)).toBeGreaterThan(loudestBand(rising, 15) + 4); // row 0 = highest band
    const falling = spectrogramImage(synthesize('a falling chirp', pick));
    expect(loudestBand(falling, 15)).toBeGreaterThan(loudestBand(falling, 0) + 4);
    const hum = spectrogramImage(synthesize('a low hum', pick));
    const whistle = spectrogramImage(synthesize('a high whistle', pick));
    for (const frame of [0, 8, 15]) {
      expect(loudestBand(hum, frame)).toBeGreaterThanOrEqual(13); // below 750 Hz
      expect(loudestBand(whistle, frame)).toBeLessThanOrEqual(10); // above 1250 Hz
    }
    const beeps = spectrogramImage(synthesize('two beeps', pick));
    // The loudest cell of each frame: the beeps' frames reach white, a frame inside the gap only the noise floor.
    const loudest = Array.from({ length: 16 }, (_, frame) =>
      Math.max(...Array.from({ length: 16 }, (_, row) => beeps.data[(row * 16 + frame) * 3])),
    );
    expect(Math.max(...loudest)).toBe(255);
    expect(Math.min(...loudest)).toBeLessThan(128);
    const noise = spectrogramImage(synthesize('static', pick));
    expect(Math.min(...Array.from({ length: 256 }, (_, cell) => noise.data[cell * 3]))).toBeGreaterThan(100);
  });

  it('every demonstration character is in the alphabet; prompt and completion fit the 256 positions', () => {
    const alphabet = new Set(r1AqaTask.alphabet);
    for (const row of r1AqaTask.trainExamples(60, 3))
      for (const draw of [0, 0.99]) {
        const completion = r1AqaTask.demonstration(row, () => draw);
        for (const character of completion + String(row.prompt).replace('<image>', ''))
          expect(alphabet.has(character)).toBe(true);
        expect(completion.length + 1).toBeLessThanOrEqual(recipe.config.sampling.maxNewTokens);
        // A character a token, the image's 4 tokens (fake, global, 1 image token, fake) for its placeholder.
        expect(
          String(row.prompt).length - '<image>'.length + 4 + recipe.config.sampling.maxNewTokens,
        ).toBeLessThanOrEqual(256);
      }
  });

  it('trains through grpo train: SFT, then GRPO on accuracy + format with the authors settings', async () => {
    // The pools hold what the steps use (2 × 4 demonstrations, 2 × 2 prompts): each generated row
    // synthesizes a clip and its spectrogram, and the trainer draws its pools several times, so the
    // default 4096 rows per pool were most of this test's time.
    const set = [
      'sft.steps=2',
      'sft.batchSize=4',
      'sft.examples=8',
      'grpo.steps=2',
      'grpo.promptsPerStep=2',
      'grpo.examples=4',
      'grpo.microBatchSize=16',
      'evaluation.examples=2',
      'evaluation.every=0',
      `logging.runsDirectory=${JSON.stringify(scratch)}`,
    ];
    expect(await runTrainCommand({ recipe: 'recipes/papers/r1-aqa.ts', set, runName: 'r1-aqa', quiet: true })).toBe(0);
    const run = join(scratch, 'r1-aqa');
    expect(JSON.parse(readFileSync(join(run, 'summary.json'), 'utf8')).status).toBe('finished');
    expect(JSON.parse(readFileSync(join(run, 'config.json'), 'utf8'))).toMatchObject({
      task: 'r1-aqa-sounds',
      sampling: { groupSize: 8, temperature: 1 },
      algorithm: { klCoefficient: 0.04, klEstimator: 'k3', advantageOptions: { epsilon: 1e-4 } },
    });
    const lines = readFileSync(join(run, 'metrics.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(lines.filter((line) => 'reward/accuracy/mean' in line && 'reward/format/mean' in line).length).toBe(2);
  }, 180_000);
});
