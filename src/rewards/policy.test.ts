/**
 * Tests of the rewards that read the policy: the unlikeliness reward against the authors' rule
 * (values computed with their lines of `ray_lean_trainer.py` in float64 torch), the negative
 * surprisal, and the refusal when the policy logprobs are absent.
 */
import { describe, expect, it } from 'vitest';
import { createReward, rewardFactories } from './factories.js';
import {
  ascendingRanks,
  meanPolicyLogprob,
  negativeSurprisal,
  promptWithoutQuestion,
  selfAlignedReward,
  unlikeliness,
} from './policy.js';
import { scoreRewards } from './run.js';
import { isGroupReward, makeRewardInput, type RewardFn, type RewardInput } from './types.js';

/** A group whose completions are their own correctness ('1' or '0') with the given per-token logprobs. */
function group(completions: readonly string[], logprobs: readonly (readonly number[])[]): RewardInput[] {
  return completions.map((completion, indexInGroup) =>
    makeRewardInput({
      completion,
      completionIds: logprobs[indexInGroup]!.map((_, t) => t + 1),
      policyLogprobs: logprobs[indexInGroup],
      group: completions,
      indexInGroup,
      row: { answer: '1' },
    }),
  );
}
const isOne: RewardFn = (input) => (input.completion === '1' ? 1 : 0);

describe('unlikeliness (He et al. 2025, the authors’ rank_penalty rule)', () => {
  it('scales correct samples by 1 − β·rank/G, rank 0 the least likely (authors’ torch: [0.9375, 0.8125, 0, 1])', async () => {
    // mean logprobs −1, −0.2, −0.5, −3: ranks 1, 3, 2, 0; the third is wrong and stays 0
    const inputs = group(['1', '1', '0', '1'], [[-1], [-0.2], [-0.5], [-3]]);
    const scores = await unlikeliness({ correctness: isOne }).scoreGroup(inputs);
    expect(scores).toEqual([0.9375, 0.8125, 0, 1]);
  });

  it('ranks by the mean token logprob, not the sum (authors’ torch, β 0.5: [0.875, 0.625, 1, 0])', async () => {
    // sums −2, −0.6, −2, −1 would tie; means −1, −0.2, −2, −0.5 rank 1, 3, 0, 2
    const inputs = group(['1', '1', '1', '0'], [[-0.5, -1.5], [-0.1, -0.1, -0.4], [-2], [-0.25, -0.75]]);
    const scores = await unlikeliness({ correctness: isOne, rankPenalty: 0.5 }).scoreGroup(inputs);
    expect(scores).toEqual([0.875, 0.625, 1, 0]);
  });

  it('breaks exact ties in sampling order and keeps a null correctness null', async () => {
    expect(ascendingRanks([-1, -1, -2])).toEqual([1, 2, 0]);
    const scores = await unlikeliness({ correctness: (input) => (input.completion === '?' ? null : 1) }).scoreGroup(
      group(['?', '1'], [[-1], [-1]]),
    );
    expect(scores).toEqual([null, 1 - 0.25 / 2]);
  });

  it('leaves tokens the policy did not produce (NaN) out of the mean', () => {
    const input = makeRewardInput({ completion: 'x', completionIds: [1, 2, 3], policyLogprobs: [-1, Number.NaN, -3] });
    expect(meanPolicyLogprob(input, 'test')).toBe(-2);
  });

  it('is built by name with a correctness reward by name, and refuses a bad rankPenalty', async () => {
    const reward = createReward('unlikeliness', { rankPenalty: 0.5 });
    expect(isGroupReward(reward)).toBe(true);
    const inputs = group(['so \\boxed{1}', 'so \\boxed{1}', 'so \\boxed{2}'], [[-0.1], [-2], [-1]]);
    const matrix = await scoreRewards([{ name: 'unlikeliness', reward, weight: 1 }], [inputs]);
    // ranks 2, 0, 1 of G = 3: 1 − 0.5·2/3, 1, and the wrong one 0
    expect(Array.from(matrix.scores)).toEqual([1 - (0.5 * 2) / 3, 1, 0]);
    expect(() => createReward('unlikeliness', { rankPenalty: -1 })).toThrow(/rankPenalty/);
    expect(() => createReward('unlikeliness', { correctness: { name: 'majority-vote' } })).toThrow(/group reward/);
  });

  it("in a run, unnamed correctness is the task's own check (a text answer math-answer would score 0); a named one still wins", async () => {
    const taskCorrectness: RewardFn = (input) => (input.completion === 'Oslo' ? 1 : 0);
    const inputs = group(['Oslo', 'Bergen', 'Oslo'], [[-0.1], [-2], [-1]]);
    const score = async (options: Record<string, unknown>) => {
      const reward = rewardFactories.get('unlikeliness').create(options, { taskCorrectness });
      return Array.from((await scoreRewards([{ name: 'unlikeliness', reward, weight: 1 }], [inputs])).scores);
    };
    // ranks 2, 0, 1 of G = 3 at β 0.5: the task's right answers 1 − 0.5·2/3 and 1 − 0.5/3, the wrong one 0
    expect(await score({ rankPenalty: 0.5 })).toEqual([1 - (0.5 * 2) / 3, 0, 1 - 0.5 / 3]);
    expect(await score({ rankPenalty: 0.5, correctness: { name: 'math-answer' } })).toEqual([0, 0, 0]);
    // length-among-correct too: both right answers are equally long, so both score 1
    const lengths = rewardFactories.get('length-among-correct').create({}, { taskCorrectness });
    const matrix = await scoreRewards([{ name: 'length-among-correct', reward: lengths, weight: 1 }], [inputs]);
    expect(Array.from(matrix.scores)).toEqual([1, 0, 1]);
  });

  it('fails with one sentence naming the reward when the policy logprobs are absent (grpo serve-rewards)', async () => {
    const inputs = [makeRewardInput({ completion: '1', completionIds: [1] })];
    const matrix = await scoreRewards(
      [{ name: 'unlikeliness', reward: unlikeliness({ correctness: isOne }), weight: 1 }],
      [inputs],
    );
    expect(matrix.status).toEqual(['error']);
    expect(matrix.failures[0]!.message).toBe(
      'reward "unlikeliness" needs the completion\'s logprobs under the policy (RewardInput.policyLogprobs: set by grpo train, read by grpo reward from a policy_logprobs column), and this input has none',
    );
  });
});

describe('negative-surprisal', () => {
  it('is the mean log π of the completion tokens', async () => {
    const reward = negativeSurprisal();
    expect(await reward(group(['a'], [[-0.5, -1.5]])[0]!)).toBe(-1);
    expect(await reward(group(['a'], [[]])[0]!)).toBe(0);
    expect(createReward('negative-surprisal')).toBeTypeOf('function');
    expect(() => reward(makeRewardInput({ completion: 'a' }))).toThrow(/negative-surprisal" needs/);
  });
});

describe('self-aligned (SAR, the authors’ compute_ppl_qa_log with use_denominator)', () => {
  /** A completion with per-token logprobs after its prompt, and `after` the policy's logprobs after another. */
  function input(withQuestion: number[], withoutQuestion: number[], prompt: RewardInput['prompt'] = 'What is 2+2?') {
    const asked: RewardInput['prompt'][] = [];
    const made = makeRewardInput({
      completion: 'a',
      prompt,
      completionIds: withQuestion.map((_, t) => t + 1),
      policyLogprobs: withQuestion,
      policyLogprobsAfter: async (other) => (asked.push(other), withoutQuestion),
    });
    return { made, asked };
  }

  it('is (ppl(a) − ppl(a|q))/ppl(a), at least −1, with the question taken out of the prompt', async () => {
    const reward = selfAlignedReward();
    // ppl(a|q) = e^0.5, ppl(a) = e^1: (e − e^0.5)/e = 1 − e^−0.5
    const likelier = input([-0.5, -0.5], [-1, -1]);
    expect(await reward(likelier.made)).toBeCloseTo(1 - Math.exp(-0.5), 8);
    expect(likelier.asked).toEqual(['']);
    // ppl(a) = e^0.1 < ppl(a|q) = e^0.5: negative
    expect(await reward(input([-0.5, -0.5], [-0.1, -0.1]).made)).toBeCloseTo(
      (Math.exp(0.1) - Math.exp(0.5)) / Math.exp(0.1),
      8,
    );
    // far less likely with the question: clipped at −1
    expect(await reward(input([-3, -3], [-0.1, -0.1]).made)).toBe(-1);
    // the mean is over the tokens the policy produced (tool output, NaN, left out of both)
    expect(await reward(input([-0.5, Number.NaN, -0.5], [-1, -7, -1]).made)).toBeCloseTo(1 - Math.exp(-0.5), 8);
    expect(await reward(input([], []).made)).toBeNull();
  });

  it('a chat prompt keeps its system messages and gets an empty user turn', async () => {
    const system = { role: 'system' as const, content: 'Think step by step.' };
    const chat = input([-0.5], [-1], [system, { role: 'user', content: 'What is 2+2?' }]);
    await selfAlignedReward()(chat.made);
    expect(chat.asked).toEqual([[system, { role: 'user', content: '' }]]);
    expect(promptWithoutQuestion([{ role: 'user', content: 'q' }])).toEqual([{ role: 'user', content: '' }]);
  });

  it('names what it needs where the caller cannot score under the policy', async () => {
    const reward = createReward('self-aligned') as RewardFn;
    await expect(async () => reward(makeRewardInput({ completion: 'a' }))).rejects.toThrow(
      /self-aligned" needs the completion's logprobs/,
    );
    const noForward = makeRewardInput({ completion: 'a', completionIds: [1], policyLogprobs: [-1] });
    await expect(async () => reward(noForward)).rejects.toThrow(
      /needs the policy's log-probs of the completion after another prompt/,
    );
    expect(rewardFactories.get('self-aligned').citation).toContain('2509.05489');
  });
});
