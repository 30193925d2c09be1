/**
 * Mobile-Agent-v3's TRPO recipe (#225, recipes/papers/mobile-agent-v3.ts): the trajectory reward
 * R(τ) = accuracy + format (−0.5 for a malformed action) of its phone, the replay buffer
 * (an all-failed group gets one failing trajectory replaced by a stored success of the same task, its
 * π_old recomputed; a group with a success is stored and left alone), the running advantage `trpo`
 * (statistics over every trajectory reward so far), and the recipe end to end through `grpo train` at
 * a tiny size.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { grpoStepRecords, inProcessCli, tinyRunFlags } from '../../test/helpers/cli-in-process.js';
import type { RolloutFn, RolloutSample } from '../rollout/rollout.js';
import {
  MALFORMED_PENALTY,
  PhoneEpisode,
  task,
  trpoAdvantage,
  trpoAdvantages,
  trpoReplayRollout,
} from '../../recipes/papers/mobile-agent-v3.js';

const root = new URL('../../', import.meta.url).pathname;
const recipe = join(root, 'recipes/papers/mobile-agent-v3.ts');
const { runs, grpo } = inProcessCli('grpo-mobile-agent-v3-');

/** A sample whose episode reward is `reward`, marked by `tag` (its completion ids). */
function trajectory(reward: number, tag: number): RolloutSample {
  return {
    promptIndex: 0,
    completionIds: [tag, tag],
    oldLogprobs: [-9, -9],
    lossMask: [1, 0],
    text: '',
    truncated: false,
    promptIds: [1],
    episode: {
      messages: [],
      toolCalls: [],
      turns: 1,
      turnRewards: [],
      stopReason: 'env_done',
      environmentReward: reward,
    },
  };
}

/** An inner rollout that returns the scripted rewards of each call, G per prompt. */
function scripted(calls: number[][][]): RolloutFn {
  let call = 0;
  return async () => {
    const groups = calls[call++]!;
    return groups.flatMap((rewards, promptIndex) =>
      rewards.map((reward, g) => ({ ...trajectory(reward, 100 * call + 10 * promptIndex + g), promptIndex })),
    );
  };
}

/** A model-less context: the unit tests script the inner rollout and the recomputed logprobs. */
const context = { model: { parameters: new Map() } } as unknown as Parameters<RolloutFn>[0];
const settings = { groupSize: 3, maxNewTokens: 8, temperature: 1, seed: 5 } as Parameters<RolloutFn>[2];
const prompts = [
  { example: { prompt: 'task A' } },
  { example: { prompt: 'task B' } },
] as unknown as Parameters<RolloutFn>[1];

describe('the phone (R(τ) = accuracy + format)', () => {
  it('scores a finished path 1, a wrong click 0 and a malformed action −0.5, ending the episode', () => {
    const [row] = task.trainExamples(1, 3);
    const steps = row!.steps as { action: string }[];
    const right = new PhoneEpisode(steps as never);
    for (const step of steps) right.respond(`<action>${step.action}</action>`);
    expect([right.done(), right.reward()]).toEqual([true, 1]);
    const wrong = new PhoneEpisode(steps as never);
    expect(wrong.respond('<action>click(9)</action>')).toEqual({ done: true });
    expect(wrong.reward()).toBe(0);
    const malformed = new PhoneEpisode(steps as never);
    malformed.respond('click 1');
    expect([malformed.done(), malformed.reward()]).toEqual([true, MALFORMED_PENALTY]);
  });
});

describe("the teacher's episodes", () => {
  it('fit the recipe: every turn within sampling.maxNewTokens, every episode within the agent budget', async () => {
    const { default: loaded } = await import(recipe);
    const texts = task.trainExamples(300, 1).map((row) => task.demonstration(row, () => 0.9));
    const turns = texts.flatMap((text) => text.split(/<eos>\n[^\n]*\nA:/));
    // One character per token; the end-of-turn token is one more.
    expect(Math.max(...turns.map((turn) => turn.length)) + 1).toBeLessThanOrEqual(loaded.config.sampling.maxNewTokens);
    expect(Math.max(...texts.map((text) => text.length))).toBeLessThanOrEqual(200);
  });
});

describe('trpoReplayRollout', () => {
  it('replaces one failing trajectory of an all-failed group with a stored success of the same task', async () => {
    const recomputed: number[] = [];
    const rollout = trpoReplayRollout(
      scripted([
        [
          [0, 1, 0], // task A: a success, stored
          [0, 0, 0], // task B: all failed, nothing stored yet: left alone
        ],
        [
          [0, -0.5, 0], // task A: all failed: one replaced by the stored success
          [0, 0, 1], // task B: a success, stored, left alone
        ],
      ]),
      { currentLogprobs: (_context, sample) => (recomputed.push(sample.completionIds[0]!), [-0.25, -7]) },
    );
    const first = await rollout(context, prompts, settings);
    expect(first.map((sample) => sample.episode!.environmentReward)).toEqual([0, 1, 0, 0, 0, 0]);
    const second = await rollout(context, prompts, settings);
    const groupA = second.slice(0, 3);
    const replayed = groupA.filter((sample) => sample.completionIds[0] === 101);
    expect(replayed).toHaveLength(1); // the success of call 1, task A, position 1
    expect(groupA.filter((sample) => sample.episode!.environmentReward! < 1)).toHaveLength(2);
    expect(replayed[0]!.promptIndex).toBe(0);
    // π_old recomputed now on loss tokens, 0 on masked ones.
    expect(replayed[0]!.oldLogprobs).toEqual([-0.25, 0]);
    expect(recomputed).toEqual([101]);
    expect(second.slice(3).map((sample) => sample.completionIds[0])).toEqual([210, 211, 212]);
  });

  it('never replays across tasks and keeps groups that have a success', async () => {
    const rollout = trpoReplayRollout(
      scripted([
        [
          [1, 1, 1],
          [0, 0, 0],
        ],
        [
          [0, 0, 0],
          [0, 0, 0],
        ],
      ]),
      { currentLogprobs: () => [0, 0] },
    );
    await rollout(context, prompts, settings);
    const second = await rollout(context, prompts, settings);
    expect(second.slice(0, 3).filter((sample) => sample.completionIds[0]! < 200)).toHaveLength(1);
    expect(second.slice(3).every((sample) => sample.completionIds[0]! >= 200)).toBe(true);
  });
});

describe('the running advantage (trpo)', () => {
  it('normalises by the mean and sample std of every trajectory reward seen so far, this step included', () => {
    const running = { count: 0, mean: 0, squares: 0 };
    // Step 1: rewards {1, 0, 0, −0.5}: mean 0.125, sample std √(1.1875/3) = 0.629153; null → 0.
    expect(Array.from(trpoAdvantages(running, [1, 0, 0, -0.5, null]))).toEqual(
      [1.390754, -0.198679, -0.198679, -0.993399, 0].map((value) => expect.closeTo(value, 5)),
    );
    // Step 2 (an all-success group): six rewards seen, mean 2.5/6, sample std √(2.208333/5) = 0.664580.
    expect(Array.from(trpoAdvantages(running, [1, 1]))).toEqual([0.877745, 0.877745].map((v) => expect.closeTo(v, 5)));
    expect(running.count).toBe(6);
  });

  it('is the recipe’s advantage estimator: it keeps its statistics across steps and starts again at step 0', () => {
    const step = (rewards: number[], index: number) =>
      Array.from(trpoAdvantage.fn({ rewards, groupSizes: 2, step: index }).advantages);
    const first = step([1, 0], 0);
    expect(first).toEqual([0.707106, -0.707106].map((value) => expect.closeTo(value, 5)));
    // An all-failed group at step 1 gets a negative advantage from the running mean (the group's own z-score would give 0).
    expect(step([0, 0], 1)).toEqual([-0.5, -0.5].map((value) => expect.closeTo(value, 5)));
    expect(step([1, 0], 0)).toEqual(first);
    expect(Array.from(trpoAdvantage.fn({ rewards: [1, null, 0, 0], groupSizes: [2, 2], step: 0 }).keep)).toEqual([
      1, 0, 1, 1,
    ]);
  });
});

describe('recipes/papers/mobile-agent-v3.ts', () => {
  it('runs SFT and two GRPO steps of online phone episodes with the replay rollout through grpo train', async () => {
    const tiny = tinyRunFlags(runs, { 'evaluation.examples': undefined });
    await grpo('train', recipe, '--run-name', 'trpo', ...tiny);
    const steps = grpoStepRecords(runs, 'trpo');
    expect(steps).toHaveLength(2);
    for (const step of steps) {
      expect(step['reward/trajectory/invalid']).toBe(0);
      const mean = step['reward/trajectory/mean'] as number;
      expect(mean).toBeGreaterThanOrEqual(MALFORMED_PENALTY);
      expect(mean).toBeLessThanOrEqual(1);
    }
  });
});
