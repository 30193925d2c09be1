/**
 * SURDS's recipe (#152, recipes/papers/surds.ts): the four rewards as the authors' training/grpo/grpo.py
 * (format, location, accuracy, think-to-answer), the generated spatial questions, and SFT then GRPO
 * through `grpo train` with the recipe's rollout, whose greedy readings the think-to-answer reward scores.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { makeRewardInput } from '../rewards/types.js';
import { CharTokenizer } from '../model/char-tokenizer.js';
import { createSmallConfig } from '../model/config.js';
import { Transformer } from '../model/transformer.js';
import type { RolloutContext, RolloutFn, RolloutSettings } from '../rollout/rollout.js';
import recipe, {
  surdsAccuracy,
  surdsCenterness,
  surdsFormat,
  surdsIou,
  surdsLocation,
  surdsNormalize,
  surdsRollout,
  surdsTask,
  thinkToAnswer,
  thinkToAnswerPrompt,
} from '../../recipes/papers/surds.js';
import { runTrainCommand } from './train-command.js';

const scratch = mkdtempSync(join(tmpdir(), 'grpo-surds-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const solution = '<location>red plus: [1, 1, 7, 7], blue square: [9, 1, 15, 7]</location><answer>red plus</answer>';

describe('SURDS rewards', () => {
  it('normalize: strip, lower-case, no punctuation, no a/an/the words, single spaces', () => {
    expect(surdsNormalize('  The Red-Plus. ')).toBe('redplus');
    expect(surdsNormalize('an  apple, a day')).toBe('apple day');
    expect(surdsNormalize('Theatre')).toBe('theatre'); // "the" only as a word
    expect(surdsNormalize('Almost the same')).toBe('almost same');
  });

  it('format_reward: fullmatch of location, think, answer (DOTALL, not stripped)', () => {
    expect(surdsFormat('<location>a: [1, 1, 2, 2]</location><think>x</think><answer>a</answer>')).toBe(1);
    expect(surdsFormat('<location>\n</location>\n<think>a\nb</think> <answer>\na</answer>')).toBe(1);
    expect(surdsFormat('<think>x</think><answer>a</answer>')).toBe(0); // no location
    expect(surdsFormat(' <location></location><think></think><answer></answer>')).toBe(0); // no strip
    expect(surdsFormat('<location></location><answer></answer><think></think>')).toBe(0); // order
  });

  it("accuracy_reward: the completion's last answer (DOTALL) against the solution's first, normalized", () => {
    expect(surdsAccuracy('<answer>blue square</answer><answer>The red plus.</answer>', solution)).toBe(1);
    expect(surdsAccuracy('<answer>red plus</answer><answer>blue square</answer>', solution)).toBe(0);
    expect(surdsAccuracy('<answer>red\nplus</answer>', solution)).toBe(1); // DOTALL; whitespace collapses
    expect(surdsAccuracy('red plus', solution)).toBe(0); // no answer tag
    expect(surdsAccuracy('<answer>red plus</answer>', 'red plus')).toBe(0); // a solution without a tag
  });

  it('compute_iou and compute_centerness as the code (no +1 pixel; offsets in half-sizes of the prediction)', () => {
    expect(surdsIou([1, 1, 7, 7], [2, 2, 8, 8])).toBeCloseTo(25 / 47, 12);
    expect(surdsIou([1, 1, 1, 7], [1, 1, 1, 7])).toBe(0); // an empty union
    expect(surdsCenterness([1, 1, 7, 7], [2, 2, 8, 8])).toBeCloseTo(2 / 3, 12); // dx = dy = 1/3
    expect(surdsCenterness([1, 1, 7, 7], [1, 1, 1, 7])).toBe(0); // zero width
    expect(surdsCenterness([0, 0, 2, 2], [10, 10, 12, 12])).toBe(0); // offsets capped at 1
  });

  it("location_reward: the share of the solution's objects boxed with IoU > 0.5 (or 2·centerness − 1 > 0.5)", () => {
    const both = '<location>red plus: [2, 2, 8, 8], blue square: [9, 1, 15, 7]</location>';
    expect(surdsLocation(both, solution)).toBe(1); // IoU 0.53 and 1
    expect(surdsLocation('<location>red plus: [3, 3, 9, 9], blue square: [9, 1, 15, 7]</location>', solution)).toBe(
      0.5,
    );
    expect(surdsLocation('<location>The Red Plus: [1, 1, 7, 7]</location>', solution)).toBe(0.5); // names normalized
    expect(surdsLocation('<location>red plus: [1.5, 1, 7, 7]</location>', solution)).toBe(0); // integers only
    expect(surdsLocation('<location>x</location><location>red plus: [1, 1, 7, 7]</location>', solution)).toBe(0.5); // the last
    expect(surdsLocation('red plus: [1, 1, 7, 7]', solution)).toBe(0); // no tag
    expect(surdsLocation(both, solution, false)).toBe(0.5); // centerness: 2·(2/3) − 1 = 1/3 for the red plus
  });

  it('think-to-answer: null until the rollout has read the think; 0 without a think', async () => {
    const row = { answer: solution };
    expect(await thinkToAnswer(makeRewardInput({ completion: '<think>4 vs 12</think>', row }))).toBeNull();
    expect(await thinkToAnswer(makeRewardInput({ completion: '<answer>red plus</answer>', row }))).toBe(0);
  });
});

describe('surdsRollout (scripted generation)', () => {
  it('reads each distinct think once, greedily, with the think-to-answer prompt; the reward scores that reading', async () => {
    const tokenizer = new CharTokenizer();
    const config = createSmallConfig({ vocabSize: tokenizer.vocabSize, hiddenSize: 16, numLayers: 1, numHeads: 2 });
    const context: RolloutContext = { model: Transformer.random(config, 5), tokenizer, chatTemplate: null };
    const settings: RolloutSettings = {
      groupSize: 3,
      maxNewTokens: 8,
      temperature: 1,
      topK: 0,
      topP: 1,
      minP: 0,
      stopTokenIds: [],
      seed: 1,
    };
    const texts = [
      '<location>x</location><think>4 vs 12</think><answer>red plus</answer>',
      '<location>y</location><think> 4 vs 12 </think><answer>blue square</answer>', // the same think, stripped
      '<location>z</location><think>12 vs 4</think><answer>blue square</answer>',
    ];
    const calls: { prompts: string[]; settings: RolloutSettings }[] = [];
    const scripted: RolloutFn = async (_context, prompts, given) => {
      calls.push({ prompts: prompts.map((prompt) => String(prompt.example.prompt)), settings: given });
      const outputs =
        calls.length === 1
          ? texts
          : prompts.map((prompt) =>
              String(prompt.example.prompt).includes('\n4 vs 12\n')
                ? '<answer>The red plus.</answer>'
                : '<answer>blue square</answer>',
            );
      return outputs.map((text, index) => ({
        promptIndex: calls.length === 1 ? 0 : index,
        completionIds: [],
        oldLogprobs: [],
        lossMask: [],
        text,
        truncated: false,
      }));
    };
    const prompts = [{ example: { prompt: 'q', answer: solution }, promptIds: tokenizer.encode('q') }];
    const samples = await surdsRollout(scripted)(context, prompts, settings);
    expect(samples.map((sample) => sample.text)).toEqual(texts);
    expect(calls[1].prompts).toEqual([thinkToAnswerPrompt('4 vs 12'), thinkToAnswerPrompt('12 vs 4')]);
    expect(calls[1].settings).toMatchObject({ groupSize: 1, temperature: 0, maxNewTokens: 100 });
    const rewards = await Promise.all(
      texts.map((completion) => thinkToAnswer(makeRewardInput({ completion, row: { answer: solution } }))),
    );
    expect(rewards).toEqual([1, 1, 0]); // the reading, not the completion's own answer, is scored
  });
});

describe('SURDS spatial rows', () => {
  it("rows: the boxes are the drawn shapes' cells and the answer follows their centres", () => {
    for (const row of [...surdsTask.trainExamples(60, 2), ...surdsTask.evalExamples(20, 2)]) {
      const [, side, first, second] = /^Which is further (left|right), (\w+ \w+) or (\w+ \w+)\?/.exec(
        String(row.prompt),
      )!;
      const boxes = [...String(row.answer).matchAll(/\[(\d+), (\d+), (\d+), (\d+)\]/g)].map((m) =>
        m.slice(1).map(Number),
      );
      const image = row.images?.[0] as { data: Uint8Array };
      // Each box's centre pixel (both a square and a plus cover it) is painted, not the dark background.
      for (const [x1, y1] of boxes)
        expect([0, 1, 2].map((k) => image.data[((y1 + 3) * 16 + x1 + 3) * 3 + k])).not.toEqual([24, 24, 24]);
      const [a, b] = boxes.map(([x1, , x2]) => (x1 + x2) / 2);
      const expected = a === b ? 'Almost the same' : (side === 'left') === a < b ? first : second;
      expect(row.further).toBe(expected);
      expect(
        surdsTask.isCorrect(
          row,
          surdsTask.demonstration(row, () => 0.99),
        ),
      ).toBe(true);
    }
  });

  it('demonstrations: format 1, location 1 when right and a swapped pair when wrong; alphabet and positions fit', () => {
    const alphabet = new Set(surdsTask.alphabet);
    for (const row of surdsTask.trainExamples(50, 4)) {
      const right = surdsTask.demonstration(row, () => 0.99);
      const wrong = surdsTask.demonstration(row, () => 0);
      expect(surdsFormat(right)).toBe(1);
      expect(surdsLocation(right, String(row.answer))).toBe(1);
      expect(surdsLocation(wrong, String(row.answer))).toBe(0); // the two cells never overlap
      for (const text of [right, wrong, String(row.prompt).replace('<image>', '')])
        for (const character of text) expect(alphabet.has(character)).toBe(true);
      expect(right.length + 1).toBeLessThanOrEqual(recipe.config.sampling.maxNewTokens);
      expect(
        String(row.prompt).length - '<image>'.length + 4 + recipe.config.sampling.maxNewTokens,
      ).toBeLessThanOrEqual(256);
    }
  });

  it("trains through grpo train: the recipe's rollout reads each think greedily, so think-to-answer is scored", async () => {
    const set = [
      'sft.steps=2',
      'sft.batchSize=4',
      'grpo.steps=2',
      'grpo.promptsPerStep=2',
      'grpo.microBatchSize=16',
      'evaluation.examples=2',
      'evaluation.every=0',
      `logging.runsDirectory=${JSON.stringify(scratch)}`,
    ];
    expect(await runTrainCommand({ recipe: 'recipes/papers/surds.ts', set, runName: 'surds', quiet: true })).toBe(0);
    const run = join(scratch, 'surds');
    expect(JSON.parse(readFileSync(join(run, 'summary.json'), 'utf8')).status).toBe('finished');
    const lines = readFileSync(join(run, 'metrics.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line))
      .filter((line) => 'reward/format/mean' in line);
    expect(lines.length).toBe(2);
    for (const line of lines) {
      for (const name of ['format', 'location', 'accuracy'])
        expect(Number.isFinite(line[`reward/${name}/mean`])).toBe(true);
      // Every sampled completion with a think got a greedy reading: the reward is a number, not null.
      expect(Number.isFinite(line['reward/think-to-answer/mean'])).toBe(true);
    }
  }, 240_000);
});
