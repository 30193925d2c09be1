/**
 * recipes/papers/co-reward.ts (Co-Reward, #94) end to end through `grpo train` at a tiny size: SFT,
 * then GRPO with the `co-reward` reward only. Every step holds a question and its rephrasing
 * (`grpo.drawTogether`), and each completion's logged reward is recomputed here from the logged
 * texts: 1 when its number equals the majority number of the other group (the first seen on a tie).
 * A config that draws without the pairing column's sets, or names a column the rows lack, is
 * refused naming the field.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildProgram } from './main.js';
import { inProcessCli, settingFlags } from '../../test/helpers/cli-in-process.js';

const root = new URL('../../', import.meta.url).pathname;
const recipe = join(root, 'recipes/papers/co-reward.ts');
const { runs } = inProcessCli('grpo-co-reward-recipe-');

const tiny = settingFlags({
  'model.hiddenSize': 32,
  'model.numLayers': 1,
  'model.numHeads': 2,
  'sft.steps': 30,
  'grpo.steps': 3,
  'grpo.promptsPerStep': 2,
  'sampling.groupSize': 4,
  'evaluation.examples': 4,
  'checkpoint.every': 0,
  'logging.runsDirectory': runs,
});
const train = (name: string, ...extra: string[]) =>
  buildProgram()
    .exitOverride()
    .parseAsync(['node', 'grpo', 'train', recipe, '--run-name', name, ...tiny, ...extra]);
const readLines = (file: string) =>
  readFileSync(file, 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as Record<string, unknown>);

interface LoggedGroup {
  step: number;
  prompt: string;
  completions: Array<{ text: string; rewards: Record<string, number> }>;
}

/** The completion's last number, or null (the vote's extraction, on these digit-only texts). */
const numberOf = (text: string): number | null => {
  const numbers = text.match(/\d+/g);
  return numbers ? Number(numbers[numbers.length - 1]) : null;
};
/** The most common number, the first seen on a tie; null when nothing has one. */
const majority = (texts: string[]): number | null => {
  const counts = new Map<number, number>();
  for (const value of texts.map(numberOf)) if (value !== null) counts.set(value, (counts.get(value) ?? 0) + 1);
  let best: number | null = null;
  for (const [value, count] of counts) if (best === null || count > counts.get(best)!) best = value;
  return best;
};

describe('recipes/papers/co-reward.ts', () => {
  it('trains on questions drawn beside their rephrasings, each labelled by the other', async () => {
    await train('co-reward');
    const config = JSON.parse(readFileSync(join(runs, 'co-reward', 'config.json'), 'utf8'));
    expect(config.grpo.drawTogether).toBe('pair_id');
    expect(config.rewards.map((reward: { name: string }) => reward.name)).toEqual(['co-reward']);
    const steps = readLines(join(runs, 'co-reward', 'metrics.jsonl')).filter(
      (line) => line.phase === 'grpo' && 'loss/policy' in line,
    );
    expect(steps).toHaveLength(3);
    const groups = readLines(join(runs, 'co-reward', 'samples.jsonl')).filter(
      (line) => line.phase === 'grpo',
    ) as unknown as LoggedGroup[];
    const byStep = new Map<number, LoggedGroup[]>();
    for (const group of groups) byStep.set(group.step, [...(byStep.get(group.step) ?? []), group]);
    expect(byStep.size).toBe(3);
    for (const [, [first, second, ...rest]] of byStep) {
      expect(rest).toHaveLength(0);
      const [a, b] = first!.prompt.replace('=', '').split('+');
      expect(second!.prompt, 'the rephrasing b+a is in the same step').toBe(`${b}+${a}=`);
      for (const [group, partner] of [
        [first!, second!],
        [second!, first!],
      ]) {
        const label = majority(partner.completions.map((c) => c.text));
        for (const completion of group.completions) {
          const expected = label !== null && numberOf(completion.text) === label ? 1 : 0;
          expect(completion.rewards['co-reward'], `${group.prompt} "${completion.text}"`).toBe(expected);
        }
      }
    }
  });

  it('refuses a promptsPerStep the pairs do not divide, and a pairing column the rows lack', async () => {
    await expect(train('odd', '--set', 'grpo.promptsPerStep=3')).rejects.toThrow(
      'grpo.promptsPerStep: 3 is not a multiple of 2',
    );
    await expect(train('missing', '--set', 'grpo.drawTogether="question_id"')).rejects.toThrow(
      'grpo.drawTogether: training row 0 has no "question_id" column',
    );
  });
});
