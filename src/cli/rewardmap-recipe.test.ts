/**
 * RewardMap's route-planning recipe (#131, recipes/papers/rewardmap.ts): the authors' reason_map.py
 * score (valid route 10, + 0.5 × the detail reward, × the difficulty weight) worked by hand on a
 * two-line map, `clean_string`'s replacements, the generated maps, and SFT then GRPO through `grpo train`.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import recipe, {
  cleanString,
  rewardMapScore,
  rewardMapTask,
  routeDetailScore,
  routeDifficultyWeight,
  routeIsValid,
  type MetroData,
} from '../../recipes/papers/rewardmap.js';
import { runTrainCommand } from './train-command.js';

const scratch = mkdtempSync(join(tmpdir(), 'grpo-rewardmap-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const metro: MetroData = { 'Line 1': ['B1', 'B2', 'B3', 'B4'], 'Line 2': ['A3', 'B3', 'C3', 'D3'] };
const leg = (line: string, from: string, to: string) =>
  `Route Name: ${line}\nDeparture Stop: ${from}\nArrival Stop: ${to}`;
const direct = { metro, station_1: 'B1', station_2: 'B4', question_transfer_count: 0, difficulty_city: 'easy' };
const transfer = { ...direct, station_2: 'D3', question_transfer_count: 1 };

describe('RewardMap route score (reason_map.py, difficulty_aware, planning)', () => {
  it('clean_string: its replacements in order (Univ. → University → Universityersity), 站, brackets, spaces and dashes', () => {
    expect(cleanString('Univ. Station (Transfer)')).toBe('universityersity');
    expect(cleanString('Main Road')).toBe('mainlu');
    expect(cleanString('Xizhimen 站')).toBe('xizhimen');
    expect(cleanString('Sha-Tin Metro, Station*')).toBe('shatin');
    expect(cleanString('B3（换乘站）')).toBe('b3');
  });

  it('a direct route: 10 + 0.5 × (2 − 5 + 4) = 10.5; the wrong line −1.5; the wrong end 0', () => {
    expect(rewardMapScore(leg('Line 1', 'B1', 'B4'), direct)).toBe(10.5);
    expect(routeDetailScore(leg('Line 2', 'B1', 'B4'), metro, 'B1', 'B4', 0)).toBe(-3); // 2 − 5, no line credit
    expect(rewardMapScore(leg('Line 2', 'B1', 'B4'), direct)).toBe(-1.5);
    expect(rewardMapScore(leg('Line 1', 'B1', 'B3'), direct)).toBe(0); // the arrival is not station 2
  });

  it('a route with a transfer: (10 + 0.5 × (2 + 3 + 1 − 5 + 3)) × 1.5 = 18; the swapped lines 0.5 × 3 × 1.5', () => {
    const right = `${leg('Line 1', 'B1', 'B3')}\n--${leg('Line 2', 'B3', 'D3')}`;
    expect(routeIsValid(right, metro, 'B1', 'D3')).toBe(true);
    expect(routeDetailScore(right, metro, 'B1', 'D3', 1)).toBe(4);
    expect(rewardMapScore(right, transfer)).toBe(18);
    const swapped = `${leg('Line 2', 'B1', 'B3')}\n--${leg('Line 1', 'B3', 'D3')}`;
    expect(routeIsValid(swapped, metro, 'B1', 'D3')).toBe(false);
    expect(rewardMapScore(swapped, transfer)).toBe(2.25);
    const badTransfer = `${leg('Line 1', 'B1', 'B2')}\n--${leg('Line 2', 'B3', 'D3')}`;
    expect(routeIsValid(badTransfer, metro, 'B1', 'D3')).toBe(false); // B2 ≠ B3: the legs do not meet
  });

  it('labels: exact case for the route check, any case for the detail check (whose fields then read "Wrong")', () => {
    const lower = 'route name: Line 1\ndeparture stop: B1\narrival stop: B4';
    expect(routeIsValid(lower, metro, 'B1', 'B4')).toBe(false);
    expect(rewardMapScore(lower, direct)).toBe(0);
    expect(routeIsValid(`${leg('constructor', 'B1', 'B4')}`, metro, 'B1', 'B4')).toBe(false); // not a line of the map
  });

  it('difficulty weights: 1 / 1.2 / 1.5 by city, + 0.5 with a transfer; another city is refused', () => {
    expect([
      routeDifficultyWeight('easy', 0),
      routeDifficultyWeight('middle', 1),
      routeDifficultyWeight('hard', 2),
    ]).toEqual([1, 1.7, 2]);
    expect(() => routeDifficultyWeight('medium', 0)).toThrow(/difficulty_city "medium"/);
  });
});

describe('RewardMap maps', () => {
  it('rows: the answer is a valid route of the map; the teacher swaps the lines; alphabet and positions fit', () => {
    const alphabet = new Set(rewardMapTask.alphabet);
    for (const row of [...rewardMapTask.trainExamples(60, 2), ...rewardMapTask.evalExamples(20, 2)]) {
      const metroOf = row.metro as MetroData;
      expect(routeIsValid(String(row.answer), metroOf, String(row.station_1), String(row.station_2))).toBe(true);
      expect(String(row.answer).split('--').length).toBe(Number(row.question_transfer_count) + 1);
      const wrong = rewardMapTask.demonstration(row, () => 0);
      expect(rewardMapTask.isCorrect(row, wrong)).toBe(false);
      const right = rewardMapTask.demonstration(row, () => 0.99);
      for (const character of right + wrong + String(row.prompt).replace('<image>', ''))
        expect(alphabet.has(character)).toBe(true);
      expect(right.length + 1).toBeLessThanOrEqual(recipe.config.sampling.maxNewTokens);
      expect(
        String(row.prompt).length - '<image>'.length + 4 + recipe.config.sampling.maxNewTokens,
      ).toBeLessThanOrEqual(256);
      // Line 1's stations lie on a red row of the image: its first station's cell shows red beside the white dot.
      const image = row.images?.[0] as { data: Uint8Array };
      const [r, c] = ['ABCD'.indexOf(metroOf['Line 1'][0][0]), 0];
      expect(
        Array.from(image.data.subarray(((r * 4 + 1) * 16 + c * 4 + 3) * 3, ((r * 4 + 1) * 16 + c * 4 + 3) * 3 + 3)),
      ).toEqual([230, 40, 40]);
    }
  });

  it('trains through grpo train: SFT, then GRPO on the route score', async () => {
    const set = [
      'sft.steps=2',
      'sft.batchSize=4',
      'grpo.steps=2',
      'grpo.promptsPerStep=2',
      'grpo.microBatchSize=8',
      'evaluation.examples=2',
      'evaluation.every=0',
      `logging.runsDirectory=${JSON.stringify(scratch)}`,
    ];
    expect(
      await runTrainCommand({ recipe: 'recipes/papers/rewardmap.ts', set, runName: 'rewardmap', quiet: true }),
    ).toBe(0);
    const run = join(scratch, 'rewardmap');
    expect(JSON.parse(readFileSync(join(run, 'summary.json'), 'utf8')).status).toBe('finished');
    expect(JSON.parse(readFileSync(join(run, 'config.json'), 'utf8'))).toMatchObject({
      task: 'rewardmap-routes',
      sampling: { groupSize: 4 },
      algorithm: { klCoefficient: 0.01, klEstimator: 'k3' },
    });
    const lines = readFileSync(join(run, 'metrics.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(lines.filter((line) => 'reward/reasonmap/mean' in line).length).toBe(2);
  }, 180_000);
});
