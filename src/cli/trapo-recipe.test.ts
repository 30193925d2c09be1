/**
 * recipes/papers/trapo.ts (TraPO, #97): the trajectory similarity and the kept set against the
 * float64 torch reference written from the authors' trainer (scripts/reference/trapo.py), the
 * unique-majority pseudo-reward, the `trapo-grpo` estimator, and `grpo train` with the recipe at a
 * tiny size: every step draws the whole pool once, unlabeled groups stay out of the loss through
 * the warm-up, and after it exactly the unlabeled groups whose trajectories (recomputed here from
 * the logged completions) TraPO chooses are scored and trained on.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { grpoAdvantage } from '../algorithms/index.js';
import { verifyMathAnswer } from '../rewards/index.js';
import { makeRewardInput } from '../rewards/types.js';
import {
  TRAPO_POOL_SIZE,
  chooseByTrajectory,
  isLabeledProblem,
  trajectorySimilarity,
  trapoAdvantage,
  trapoAdvantagePart,
  trapoReward,
  uniqueMajorityRewards,
} from '../../recipes/papers/trapo.js';
import { inProcessCli, settingFlags } from '../../test/helpers/cli-in-process.js';

const root = new URL('../../', import.meta.url).pathname;
const { runs, grpo } = inProcessCli('grpo-trapo-recipe-');

interface ReferenceCase {
  references: number[][];
  queries: number[][];
  topKRatio: number;
  threshold: number;
  scores: number[];
  kept: boolean[];
}
const reference = JSON.parse(readFileSync(join(root, 'test/fixtures/trapo.json'), 'utf8')) as {
  cases: ReferenceCase[];
};

describe('TraPO trajectory selection (authors’ _compute_trajectory_cosine, float64 torch)', () => {
  it.each(reference.cases)('scores and keeps as the reference (top-k $topKRatio, threshold $threshold)', (c) => {
    const scores = trajectorySimilarity(c.references, c.queries);
    scores.forEach((score, i) => expect(score).toBeCloseTo(c.scores[i]!, 12));
    expect(chooseByTrajectory(scores, c.topKRatio, c.threshold)).toEqual(c.kept);
  });

  it('scores NaN (never kept) below two points, or for a query shorter than the shortest reference', () => {
    expect(trajectorySimilarity([[0.5]], [[0.5]])).toEqual([NaN]);
    expect(trajectorySimilarity([[0, 1, 1]], [[0, 1]])).toEqual([NaN]);
    expect(chooseByTrajectory([NaN, 0.1], 0.1, 0.4)).toEqual([false, true]);
  });
});

describe('uniqueMajorityRewards', () => {
  it('rewards the unique most common answer; a tie, no-answer completions counting one each, rewards none', () => {
    expect(uniqueMajorityRewards(['4', 'so 4', '5'])).toEqual([1, 1, 0]);
    expect(uniqueMajorityRewards(['4', '5'])).toEqual([0, 0]);
    expect(uniqueMajorityRewards(['4', 'none', 'none'])).toEqual([0, 0, 0]);
    expect(uniqueMajorityRewards(['4', '4', 'none', 'none'])).toEqual([1, 1, 0, 0]);
  });
});

describe('the trapo reward and the trapo-grpo estimator', () => {
  const groupOf = (prompt: string, answer: string, labeled: boolean, step: number, texts: string[]) =>
    texts.map((completion, indexInGroup) =>
      makeRewardInput({ prompt, completion, row: { prompt, answer, labeled }, group: texts, indexInGroup, step }),
    );

  it('leaves unlabeled groups unscored in the warm-up, then keeps the one whose trajectory follows the labeled', async () => {
    const reward = trapoReward({ warmUpSteps: 3, topKRatio: 0.1, threshold: 0.99 });
    // labeled "1+1=" climbs 0, 1/2, 1; unlabeled "u" climbs too, "v" falls; "w" stays flat.
    const texts = [
      [
        ['0', '0'],
        ['2', '0'],
        ['2', '2'],
        ['2', '2'],
      ],
      [
        ['1', '2'],
        ['1', '1'],
        ['1', '1'],
        ['1', '1'],
      ],
      [
        ['1', '1'],
        ['1', '1'],
        ['1', '2'],
        ['1', '2'],
      ],
      [
        ['1', '1'],
        ['1', '1'],
        ['1', '1'],
        ['1', '1'],
      ],
    ];
    const results: (number | null)[][] = [];
    for (let step = 0; step < 4; step++) {
      const inputs = [
        ...groupOf('1+1=', '2', true, step, texts[0]![step]!),
        ...groupOf('u', '', false, step, texts[1]![step]!),
        ...groupOf('v', '', false, step, texts[2]![step]!),
        ...groupOf('w', '', false, step, texts[3]![step]!),
      ];
      results.push([...(await reward.scoreBatch(inputs))]);
    }
    for (let step = 0; step < 3; step++) expect(results[step]!.slice(2)).toEqual(new Array(6).fill(null));
    expect(results[3]).toEqual([1, 1, 1, 1, null, null, null, null]);
    expect(reward.trajectories.unlabeled.get('"u"')).toEqual([0, 1, 1, 1]);
    expect([...reward.trajectories.reference.keys()]).toEqual(['label_"1+1="', 'unlabel_"u"']);
  });

  it('gives keep = 0 where the trapo reward is unscored, and GRPO advantages elsewhere', () => {
    const input = {
      rewards: [1, 0, 0, 0],
      groupSizes: 2,
      rewardNames: ['trapo'],
      rewardComponents: [[1, 0, null, null]],
    };
    const result = trapoAdvantage(input);
    const grpo = grpoAdvantage({ rewards: [1, 0], groupSizes: 2 });
    expect(Array.from(result.keep)).toEqual([1, 1, 0, 0]);
    expect(Array.from(result.advantages.slice(0, 2))).toEqual(Array.from(grpo.advantages));
    expect(() => trapoReward().scoreBatch(groupOf('1+1=', '2', 'yes' as unknown as boolean, 0, ['2', '2']))).toThrow(
      /row column "labeled" must be true or false, got "yes"/,
    );
    // Refused when the run's config is validated, before any model loads (`grpo train … --set
    // 'algorithm.advantageOptions={"reward":"x"}'` prints it); a second in-process load of a recipe
    // with parts would clash with the first's registration, so the entry's check is called here.
    expect(trapoAdvantagePart.refuses!({ reward: 'x' }, { rewardNames: ['trapo'] } as never)).toEqual([
      'algorithm.advantageOptions.reward: "x" is not a reward of this run (rewards: trapo)',
    ]);
    expect(() => trapoAdvantage(input, { reward: 'correct' })).toThrow(
      /algorithm.advantageOptions.reward: the run has no reward named "correct"/,
    );
  });
});

const tiny = settingFlags({
  'model.hiddenSize': 32,
  'model.numLayers': 1,
  'model.numHeads': 2,
  'sft.steps': 30,
  'grpo.steps': 10,
  'sampling.groupSize': 4,
  'evaluation.examples': 4,
  'checkpoint.every': 0,
  'logging.samplesPerStep': TRAPO_POOL_SIZE,
  'logging.runsDirectory': runs,
});

interface LoggedGroup {
  step: number;
  phase: string;
  prompt: string;
  answer: string;
  completions: Array<{ text: string; rewards: Record<string, number | null>; inLoss: boolean }>;
}

describe('recipes/papers/trapo.ts through grpo train', () => {
  it('trains on the unlabeled groups TraPO chooses after the warm-up, and on no other', async () => {
    await grpo('train', join(root, 'recipes/papers/trapo.ts'), '--run-name', 'trapo', ...tiny);
    const groups = readFileSync(join(runs, 'trapo', 'samples.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as LoggedGroup)
      .filter((group) => group.phase === 'grpo');
    const steps = [...new Set(groups.map((group) => group.step))].sort((a, b) => a - b);
    expect(steps).toHaveLength(10);
    const labeled = new Map<string, number[]>();
    const unlabeled = new Map<string, number[]>();
    const reference = new Map<string, number[]>();
    let chosenAfterWarmUp = 0;
    steps.forEach((step, index) => {
      const ofStep = groups.filter((group) => group.step === step);
      expect(new Set(ofStep.map((group) => group.prompt)).size, 'every row once a step').toBe(TRAPO_POOL_SIZE);
      const isLabeled = (group: LoggedGroup) => {
        const [a, b] = group.prompt.replace('=', '').split('+').map(Number);
        return isLabeledProblem(a!, b!);
      };
      for (const group of ofStep) {
        const texts = group.completions.map((completion) => completion.text);
        const rewards = isLabeled(group)
          ? texts.map((text) => (verifyMathAnswer(text, group.answer) ? 1 : 0))
          : uniqueMajorityRewards(texts);
        const history = isLabeled(group) ? labeled : unlabeled;
        history.set(group.prompt, [...(history.get(group.prompt) ?? []), rewards.reduce((a, b) => a + b, 0) / 4]);
      }
      const pending = ofStep.filter((group) => !isLabeled(group));
      let kept = pending.map(() => false);
      if (index >= 8) {
        for (const [prompt, rates] of labeled) reference.set(`label_${prompt}`, rates);
        const scores = trajectorySimilarity(
          [...reference.values()],
          pending.map((group) => unlabeled.get(group.prompt)!),
        );
        kept = chooseByTrajectory(scores, 0.1, 0.4);
        pending.forEach((group, g) => {
          if (!kept[g]) return;
          if (reference.has(`unlabel_${group.prompt}`))
            for (const key of [...reference.keys()]) if (key.startsWith('unlabel')) reference.delete(key);
          reference.set(`unlabel_${group.prompt}`, [...unlabeled.get(group.prompt)!]);
        });
        chosenAfterWarmUp += kept.filter(Boolean).length;
      }
      for (const group of ofStep) {
        const scored = isLabeled(group) || kept[pending.indexOf(group)];
        for (const completion of group.completions) {
          expect(completion.rewards.trapo === null, `${group.prompt} at step ${step}`).toBe(!scored);
          expect(completion.inLoss).toBe(Boolean(scored));
        }
      }
    });
    expect(chosenAfterWarmUp).toBeGreaterThanOrEqual(2); // at least the top one at each of steps 8 and 9
  });
});
