/**
 * Tests of OTC-PO's tool-integrated reward against the hand-derived vectors of
 * docs/turn-credit.md §5 (the paper's formula, arXiv 2504.14870).
 */
import { describe, expect, it } from 'vitest';
import { createReward } from './factories.js';
import searchAgent from '../../recipes/search-agent.js';
import { resolveConfig, runRewards } from '../trainer/setup.js';
import { toolCallReward, toolEfficiency } from './tool-efficiency.js';
import { isGroupReward, makeRewardInput, type RewardEpisode, type RewardInput } from './types.js';

function episode(calls: number): RewardEpisode {
  const toolCalls = Array.from({ length: calls }, (_, turn) => ({
    name: 'calculator',
    arguments: {},
    turn,
    result: '4',
  }));
  return { messages: [], toolCalls, turns: calls + 1, turnRewards: [], stopReason: 'stop' };
}

/** Completions 'right'/'wrong' with m tool calls each. */
function group(cases: [string, number][]): RewardInput[] {
  return cases.map(([completion, calls]) => makeRewardInput({ completion, episode: episode(calls) }));
}

const correctness = ({ completion }: RewardInput) => (completion === 'right' ? 1 : 0);

describe('toolCallReward r_tool(m, n)', () => {
  it.each([
    [0, 0, 1, 1], // m = n = 0: the best case
    [1, 0, 1, 0.5], // cos(π/3)
    [2, 0, 1, 0.309017], // cos(2π/5)
    [3, 0, 1, 0.222521], // cos(3π/7)
    [1, 0, 3, Math.cos(Math.PI / 5)], // larger c decays slower: cos(π/5) = 0.809017
    [1, 1, 1, 1], // m = n: f = 1, sin(π/2)
    [2, 1, 1, Math.sqrt(3) / 2], // f = 4/3, sin(2π/3)
    [3, 1, 1, Math.SQRT1_2], // f = 3/2, sin(3π/4)
    [0, 1, 1, 0], // too few calls: f = 0
    [2, 4, 1, Math.sin((8 / 3) * (Math.PI / 8))], // f = 16/6, sin(π/3) = 0.866025
  ])('m=%i n=%i c=%i → %f', (calls, optimal, smoothing, expected) => {
    expect(toolCallReward(calls, optimal, smoothing)).toBeCloseTo(expected, 6);
  });
});

describe('toolEfficiency (OTC-PO)', () => {
  it('OTC-GRPO: n = fewest calls among the correct episodes of the group', async () => {
    // correct m = 1, 2, 3 → n = 1; the wrong one scores 0 whatever its count.
    const scores = await toolEfficiency({ correctness }).scoreGroup(
      group([
        ['right', 1],
        ['right', 2],
        ['wrong', 0],
        ['right', 3],
      ]),
    );
    expect(scores.map((value) => Number(value!.toFixed(6)))).toEqual([1, 0.866025, 0, 0.707107]);
  });
  it('OTC-GRPO: a correct episode without calls makes n = 0 and every call costs', async () => {
    const scores = await toolEfficiency({ correctness, alpha: 2 }).scoreGroup(
      group([
        ['right', 0],
        ['right', 2],
      ]),
    );
    expect(scores.map((value) => Number(value!.toFixed(6)))).toEqual([2, 0.618034]);
  });
  it('OTC-PPO: n = 0 regardless of the group', async () => {
    const scores = await toolEfficiency({ correctness, mode: 'ppo' }).scoreGroup(
      group([
        ['right', 1],
        ['right', 3],
      ]),
    );
    expect(scores.map((value) => Number(value!.toFixed(6)))).toEqual([0.5, 0.222521]);
  });
  it('an input without an episode is an error naming the field', async () => {
    await expect(
      toolEfficiency({ correctness }).scoreGroup([makeRewardInput({ completion: 'right' })]),
    ).rejects.toThrow(/input\.episode/);
  });
  it('by name, the default correctness is normalised exact match: a correct text answer scores', async () => {
    // "Oslo" has no number, so a numeric check would call every answer wrong and the run learn nothing.
    const reward = createReward('tool-efficiency');
    if (!isGroupReward(reward)) throw new Error('tool-efficiency is a group reward');
    const inputs = [
      makeRewardInput({ completion: 'Oslo', row: { answer: 'Oslo' }, episode: episode(1) }), // equal text
      makeRewardInput({ completion: '<answer>the oslo.</answer>', row: { answer: 'Oslo' }, episode: episode(2) }), // tag, case, article, punctuation
      makeRewardInput({ completion: 'Bergen', row: { answer: 'Oslo' }, episode: episode(1) }), // wrong
    ]; // prettier-ignore
    expect((await reward.scoreGroup(inputs)).map((value) => Number(value!.toFixed(6)))).toEqual([1, 0.866025, 0]);
  });
  it('the correctness check is any per-episode reward by name, with its options', async () => {
    const reward = createReward('tool-efficiency', { correctness: { name: 'math-answer' } });
    if (!isGroupReward(reward)) throw new Error('tool-efficiency is a group reward');
    const inputs = [
      makeRewardInput({ completion: '\\boxed{4}', row: { answer: '4' }, episode: episode(1) }), // math-answer reads the box
      makeRewardInput({ completion: '\\boxed{4}', row: { solution: '4' }, episode: episode(1) }), // answerColumn reaches the check
    ];
    expect(await reward.scoreGroup(inputs.slice(0, 1))).toEqual([1]);
    const byColumn = createReward('tool-efficiency', {
      correctness: { name: 'math-answer' },
      answerColumn: 'solution',
    });
    if (!isGroupReward(byColumn)) throw new Error('tool-efficiency is a group reward');
    expect(await byColumn.scoreGroup(inputs.slice(1))).toEqual([1]);
    // Refused when made: an unknown name (listing the known ones), bad options, a group reward.
    expect(() => createReward('tool-efficiency', { correctness: { name: 'nope' } })).toThrow(/nope.*math-answer/s);
    expect(() =>
      createReward('tool-efficiency', { correctness: { name: 'exact-match', options: { tagg: 'a' } } }),
    ).toThrow(/tagg/);
    expect(() => createReward('tool-efficiency', { correctness: { name: 'tool-efficiency' } })).toThrow(
      /correctness.*group reward/,
    );
  });
  it('is registered by name with strict options', async () => {
    const reward = createReward('tool-efficiency', {
      mode: 'grpo',
      smoothing: 2,
      correctness: { name: 'math-answer' },
    });
    expect(isGroupReward(reward)).toBe(true);
    expect(() => createReward('tool-efficiency', { c: 1 })).toThrow(/c/);
    if (!isGroupReward(reward)) return;
    const inputs = [
      makeRewardInput({ completion: '\\boxed{4}', row: { answer: '4' }, episode: episode(1) }),
      makeRewardInput({ completion: '\\boxed{5}', row: { answer: '4' }, episode: episode(1) }),
    ];
    expect(await reward.scoreGroup(inputs)).toEqual([1, 0]);
  });
  it("in a run, the default correctness is the task's own check (search-agent's answer after the last A:)", async () => {
    // Normalised exact match on the whole completion and the recipe's check disagree on these: the
    // recipe reads the text after the last "A:" exactly; exact match reads everything, normalised.
    const config = resolveConfig(
      { ...searchAgent.config, rewards: [{ name: 'tool-efficiency' }] },
      ['search-agent'],
      searchAgent.task,
    );
    const [{ reward }] = runRewards(config, { task: searchAgent.task, environment: searchAgent.environment });
    if (!isGroupReward(reward)) throw new Error('tool-efficiency is a group reward');
    const row = { prompt: 'Where does Mira live?', answer: 'Oslo' };
    const inputs = [
      makeRewardInput({ completion: 'Lima\nA:Oslo', row, episode: episode(1) }), // right by the recipe: its last answer
      makeRewardInput({ completion: 'A:Oslo', row, episode: episode(2) }), // right by both
      makeRewardInput({ completion: 'oslo.', row, episode: episode(0) }), // wrong by the recipe, right by exact match
    ]; // prettier-ignore
    // n = 1 (fewest calls among the right ones): r_tool(1, 1) = 1, r_tool(2, 1) = sin(2π/3).
    expect((await reward.scoreGroup(inputs)).map((value) => Number(value!.toFixed(6)))).toEqual([1, 0.866025, 0]);
  });
});
