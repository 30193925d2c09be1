/**
 * Affordance-R1's recipe (#16, recipes/papers/affordance-r1.ts): the five rewards of the authors'
 * aff_r1.py `aff_r1_score` on hand-worked cases (their try/except and Python semantics included), the
 * least-cost assignment where a greedy one is wrong, and SFT then GRPO through `grpo train`.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import recipe, {
  affordanceR1Accuracy,
  affordanceR1BoxCount,
  affordanceR1Format,
  affordanceR1Name,
  affordanceR1NonRepeat,
  affordanceR1Task,
  leastCostAssignment,
  toyWordVectors,
} from '../../recipes/papers/affordance-r1.js';
import { runTrainCommand } from './train-command.js';

const scratch = mkdtempSync(join(tmpdir(), 'grpo-affordance-r1-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const truth = '[{"bbox_2d":[28,28,196,196],"point_2d":[112,112],"affordance":"plus"}]';
const tagged = (json: string) => `<think>plus</think><rethink>ok</rethink><answer>${json}</answer>`;

describe('Affordance-R1 rewards', () => {
  it('format: the think/rethink/answer fullmatch plus each item share of its three keys', () => {
    expect(affordanceR1Format(tagged(truth))).toBe(4);
    expect(affordanceR1Format(`<think>a</think><answer>${truth}</answer>`)).toBe(3); // no rethink
    expect(
      affordanceR1Format(tagged('[{"bbox_2d":[1,2,3,4],"point_2d":[1,2],"affordance":"x"},{"bbox_2d":[1,2,3,4]}]')),
    ).toBe(1 + 3 / 2 + 1 / 2);
    expect(affordanceR1Format(tagged('[{"bbox_2d":[1,2,3],"point_2d":[1,2],"affordance":"x"}]'))).toBe(3); // box of 3
    // A dict: Python iterates its keys, 'bbox_2d' in "bbox_2d" is a substring test, then "bbox_2d"['bbox_2d'] raises.
    expect(affordanceR1Format(tagged('{"bbox_2d":[1,2,3,4]}'))).toBe(1);
    // The error on the second item keeps the first item's share, as their try around the loop.
    expect(affordanceR1Format(tagged('[{"bbox_2d":[1,2,3,4],"point_2d":[1,2],"affordance":"x"},"bbox_2d"]'))).toBe(
      1 + 3 / 2,
    );
    expect(affordanceR1Format(tagged('[not json]'))).toBe(1);
  });

  it('accuracy: IoU > 0.65, mean box L1 < 10 and point within 30 inside its box, matched, over the larger count', () => {
    expect(affordanceR1Accuracy(tagged(truth), truth)).toBe(3);
    // One toy pixel (28) to the right: IoU 141/197 = 0.716, L1 14 (not < 10), point 28 away and inside.
    expect(affordanceR1Accuracy(tagged('[{"bbox_2d":[56,28,224,196],"point_2d":[140,112]}]'), truth)).toBe(2);
    const extra =
      '[{"bbox_2d":[300,300,400,400],"point_2d":[350,350]},{"bbox_2d":[28,28,196,196],"point_2d":[112,112]}]';
    expect(affordanceR1Accuracy(tagged(extra), truth)).toBe(1.5); // the right one matched: 3 / max(2, 1)
    // The +1-pixel IoU: [0,0,2,2] against [0,0,2,1] is 6/9 = 0.667 (> 0.65); without the +1 it would be 2/4.
    const small = '[{"bbox_2d":[0,0,2,1],"point_2d":[1,1]}]';
    expect(affordanceR1Accuracy(tagged('[{"bbox_2d":[0,0,2,2],"point_2d":[1,1]}]'), small)).toBe(3);
    // A point 4 from the truth's but outside its own box scores no point hit.
    expect(affordanceR1Accuracy(tagged('[{"bbox_2d":[0,0,2,2],"point_2d":[5,1]}]'), small)).toBe(2);
    expect(affordanceR1Accuracy(tagged('[]'), truth)).toBe(0);
    expect(affordanceR1Accuracy(tagged('[{"bbox_2d":[28,28,196,196]}]'), truth)).toBe(0); // no point_2d: KeyError
    expect(affordanceR1Accuracy(truth, truth)).toBe(0); // no answer tag
  });

  it('the least-cost assignment is optimal where taking the cheapest pair first is not', () => {
    // Greedy takes (0,0) = 0 then (1,1) = 3; the optimum is (0,1) + (1,0) = 2.
    expect(leastCostAssignment([[0, 1], [1, 3]])).toEqual([[0, 1], [1, 0]]); // prettier-ignore
    expect(leastCostAssignment([[3, 1, 2], [0, 3, 3]])).toEqual([[0, 1], [1, 0]]); // prettier-ignore
    expect(leastCostAssignment([[1], [0], [3]])).toEqual([[1, 0]]);
  });

  it('non-repeat: 0 once two sentences repeat an earlier one', () => {
    expect(affordanceR1NonRepeat('a. b. a. c')).toBe(1);
    expect(affordanceR1NonRepeat('a. b. a. b.')).toBe(0);
    expect(affordanceR1NonRepeat('a. a .a')).toBe(0); // stripped
  });

  it('affordance name: word-vector cosine over 0.8 for exactly one predicted object', () => {
    expect(affordanceR1Name(tagged(truth), 'plus', toyWordVectors)).toBe(1);
    expect(affordanceR1Name(tagged(truth), 'square', toyWordVectors)).toBe(0);
    const near = new Map([
      ['grasp', [1, 0]],
      ['hold', [0.9, 0.4]], // cosine 0.914
      ['cut', [0.6, 0.8]], // cosine 0.6
    ]);
    const named = (name: string) => tagged(`[{"bbox_2d":[1,2,3,4],"point_2d":[1,2],"affordance":"${name}"}]`);
    expect(affordanceR1Name(named('hold'), 'grasp', near)).toBe(1);
    expect(affordanceR1Name(named('cut'), 'grasp', near)).toBe(0);
    expect(affordanceR1Name(named('lift'), 'grasp', near)).toBe(0); // not in the table: KeyError
    const two = tagged('[{"affordance":"grasp"},{"affordance":"grasp"}]');
    expect(affordanceR1Name(two, 'grasp', near)).toBe(0); // two names: an ambiguous numpy comparison
  });

  it('box count: as many objects as the truth (Python len, so a one-key dict counts one)', () => {
    expect(affordanceR1BoxCount(tagged(truth), truth)).toBe(1);
    expect(affordanceR1BoxCount(tagged('[]'), truth)).toBe(0);
    expect(affordanceR1BoxCount(tagged('{"a":1}'), truth)).toBe(1);
  });

  it('rows carry the solution JSON and the name; the teacher boxes the distractor on a share', () => {
    const rows = affordanceR1Task.trainExamples(40, 2);
    for (const row of rows) {
      const right = affordanceR1Task.demonstration(row, () => 0.99);
      expect(affordanceR1Task.isCorrect(row, right)).toBe(true);
      expect(affordanceR1Format(right)).toBe(4);
    }
    const withDistractor = rows.find((row) => row.blindAnswer !== null);
    expect(withDistractor).toBeDefined();
    if (withDistractor)
      expect(
        affordanceR1Task.isCorrect(
          withDistractor,
          affordanceR1Task.demonstration(withDistractor, () => 0),
        ),
      ).toBe(false);
  });

  it('every character of a demonstration is in the task alphabet (the tokenizer drops others)', () => {
    const alphabet = new Set(affordanceR1Task.alphabet);
    for (const row of affordanceR1Task.trainExamples(50, 5))
      for (const draw of [0, 0.99])
        for (const character of affordanceR1Task.demonstration(row, () => draw))
          expect(alphabet.has(character)).toBe(true);
  });

  it('every demonstration and its stop token fit the recipe sampling.maxNewTokens (a character per token)', () => {
    for (const row of affordanceR1Task.trainExamples(50, 5))
      for (const draw of [0, 0.99])
        expect(affordanceR1Task.demonstration(row, () => draw).length + 1).toBeLessThanOrEqual(
          (recipe.config as { sampling: { maxNewTokens: number } }).sampling.maxNewTokens,
        );
  });

  it('trains through grpo train: SFT, then GRPO on the five rewards', async () => {
    const set = [
      'sft.steps=2',
      'sft.batchSize=4',
      'grpo.steps=2',
      'grpo.promptsPerStep=1',
      'sampling.groupSize=2',
      'sampling.maxNewTokens=144',
      'grpo.microBatchSize=2',
      'evaluation.examples=2',
      'evaluation.every=0',
      `logging.runsDirectory=${JSON.stringify(scratch)}`,
    ];
    expect(await runTrainCommand({ recipe: 'recipes/papers/affordance-r1.ts', set, runName: 'aff', quiet: true })).toBe(
      0,
    );
    const run = join(scratch, 'aff');
    expect(JSON.parse(readFileSync(join(run, 'summary.json'), 'utf8')).status).toBe('finished');
    const config = JSON.parse(readFileSync(join(run, 'config.json'), 'utf8'));
    expect(config).toMatchObject({
      task: 'affordance-r1-locating',
      algorithm: { klCoefficient: 5e-3, klEstimator: 'k3' },
    });
    const steps = readFileSync(join(run, 'metrics.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line))
      .filter((line) =>
        ['format', 'accuracy', 'non-repeat', 'affordance', 'box-count'].every((name) => `reward/${name}/mean` in line),
      );
    expect(steps.length).toBe(2);
  }, 300_000);
});
