/**
 * AlphaDrive's planning rewards (#69) against the float64 restatement of the authors' code
 * (scripts/reference/alphadrive_rewards.py → test/fixtures/alphadrive-rewards.json): every
 * completion of each group, in sampling order, scores what theirs scores, through the registered
 * names `plan-speed`, `plan-path`, `plan-format`. Bad options are refused naming the field.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { createReward } from './factories.js';
import { planActions, planF1, SPEED_ACTION_WEIGHTS } from './driving-plan.js';
import { makeRewardInput, type RewardFn } from './types.js';

interface Case {
  name: string;
  solution: string;
  group: string[];
  speed: number[];
  path: number[];
  format: number[];
}
const cases = JSON.parse(
  readFileSync(new URL('../../test/fixtures/alphadrive-rewards.json', import.meta.url), 'utf8'),
) as Case[];

const scoreGroup = (reward: RewardFn, { group, solution }: Case) =>
  Promise.all(
    group.map((completion, indexInGroup) =>
      reward(makeRewardInput({ completion, group, indexInGroup, row: { solution } })),
    ),
  );

describe.each(cases)('$name', (testCase) => {
  it.each([
    ['plan-speed', 'speed'],
    ['plan-path', 'path'],
    ['plan-format', 'format'],
  ] as const)('%s matches the authors’ code', async (name, key) => {
    const scores = await scoreGroup(createReward(name) as RewardFn, testCase);
    scores.forEach((score, index) => expect(score).toBeCloseTo(testCase[key][index]!, 12));
  });
});

describe('plan rewards', () => {
  it('parses as the authors do: ", " separated, exact names only', () => {
    expect([...planActions('<answer> KEEP, LEFT_TURN </answer>', SPEED_ACTION_WEIGHTS)]).toEqual(['KEEP']);
    expect(planActions('<answer>KEEP,LEFT_TURN</answer>', SPEED_ACTION_WEIGHTS).size).toBe(0);
    expect(planF1(new Set(), new Set())).toBe(0);
  });

  it('diversity depends on the order within the group: the first of two equal plans gets +0.4, the second −0.4', async () => {
    const reward = createReward('plan-speed') as RewardFn;
    const plan = '<answer> STOP, STRAIGHT </answer>';
    const row = { solution: plan };
    const first = await reward(makeRewardInput({ completion: plan, group: [plan, plan], indexInGroup: 0, row }));
    const second = await reward(makeRewardInput({ completion: plan, group: [plan, plan], indexInGroup: 1, row }));
    expect((first as number) - (second as number)).toBeCloseTo(0.8, 12);
  });

  it('takes its options and refuses bad ones, naming the field; a row without the column is an error', async () => {
    const reward = createReward('plan-path', { diversityWeight: 0, solutionColumn: 'plan' }) as RewardFn;
    const score = await reward(
      makeRewardInput({
        completion: '<answer> KEEP, STRAIGHT </answer>',
        row: { plan: '<answer> KEEP, STRAIGHT </answer>' },
      }),
    );
    expect(score).toBeCloseTo(0.8, 5);
    expect(() => createReward('plan-speed', { diversityWeight: 'big' })).toThrow(
      /reward "plan-speed": bad options: diversityWeight/,
    );
    expect(() => createReward('plan-speed', { actionWeights: { KEEP: -1 } })).toThrow(/actionWeights\.KEEP/);
    expect(() => reward(makeRewardInput({ completion: 'x', row: {} }))).toThrow(/column "plan"/);
  });
});
