/**
 * TempSamp-R1's recipe (#209, recipes/papers/tempsamp-r1.ts) through `grpo train`: every logged
 * group ends with the row's ground truth, scored by the shaped IoU like the samples, and the
 * advantages are verl's GRPO over the whole group (the ground truth in) — composed here from the
 * logged rewards; reward/mean is the policy's samples only (their gt_log_exclude). Then the refusals:
 * a group of one, a template column the rows lack (a multi-turn run: trainer/agent-step.test.ts).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { shapeIou } from '../rewards/index.js';
import { grpoStepRecords, inProcessCli, settingFlags, tinyRunFlags } from '../../test/helpers/cli-in-process.js';

const { runs, grpo } = inProcessCli('grpo-tempsamp-');
const recipe = 'recipes/papers/tempsamp-r1.ts';

interface Logged {
  answer: string;
  completions: { text: string; reward: number; advantage: number; groundTruth?: boolean }[];
}

describe('recipes/papers/tempsamp-r1.ts', () => {
  it('puts the ground truth last in every group, scores it and normalises it with the group', async () => {
    const flags = tinyRunFlags(runs, { 'logging.samplesEvery': 1, 'logging.samplesPerStep': 2 });
    await grpo('train', recipe, '--run-name', 'injected', ...flags);
    const steps = grpoStepRecords(runs, 'injected');
    expect(steps).toHaveLength(2);
    const lines = readFileSync(join(runs, 'injected', 'samples.jsonl'), 'utf8')
      .trim()
      .split('\n');
    const groups = lines.map((line) => JSON.parse(line) as Logged);
    expect(groups).toHaveLength(4); // 2 steps × 2 prompts
    const truthReward = shapeIou(1, 0.8, 1) + 0.1;
    groups.forEach((group, g) => {
      const last = group.completions.at(-1)!;
      expect(last).toMatchObject({ text: `<answer> ${group.answer} </answer>`, groundTruth: true });
      expect(last.reward).toBeCloseTo(truthReward, 6);
      expect(group.completions.slice(0, -1).every((completion) => !completion.groundTruth)).toBe(true);
      // verl's GRPO: (r − mean) / (unbiased std + 1e-6) over all 4 rows
      const rewards = group.completions.map((completion) => completion.reward);
      const mean = rewards.reduce((a, b) => a + b, 0) / rewards.length;
      const std = Math.sqrt(rewards.reduce((a, b) => a + (b - mean) ** 2, 0) / (rewards.length - 1));
      group.completions.forEach((completion, i) =>
        expect(completion.advantage, `group ${g} sample ${i}`).toBeCloseTo((rewards[i] - mean) / (std + 1e-6), 4),
      );
    });
    steps.forEach((step, s) => {
      const sampled = groups.slice(2 * s, 2 * s + 2).flatMap((group) => group.completions.slice(0, -1));
      expect(step['train/groundTruthRows']).toBe(2);
      expect(step['reward/mean'] as number).toBeCloseTo(
        sampled.reduce((a, completion) => a + completion.reward, 0) / sampled.length,
        6,
      );
    });
  });

  it('refuses a group of one and a template column the rows lack, before any compute', async () => {
    const tiny = tinyRunFlags(runs);
    await expect(
      grpo(
        'train',
        recipe,
        '--run-name',
        'one',
        ...tiny,
        ...settingFlags({ 'sampling.groupSize': 1, 'grpo.microBatchSize': 2, 'algorithm.advantage': 'single-stream' }),
      ),
    ).rejects.toThrow(/grpo\.groundTruthCompletion: .*sampling\.groupSize ≥ 2 \(it is 1\)/);
    await expect(
      grpo(
        'train',
        recipe,
        '--run-name',
        'column',
        ...tiny,
        ...settingFlags({ 'grpo.groundTruthCompletion': '<answer> {solution} </answer>' }),
      ),
    ).rejects.toThrow(/grpo\.groundTruthCompletion: training row 0 has no text or number in column "solution"/);
  });
});
