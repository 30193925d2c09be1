/**
 * Tests of SCOPE's reward (papers.tsv 136): the step-wise confidence, the weighted vote and the
 * Pareto choice of the subgroup size against the authors' code re-run in Python
 * (scripts/reference/scope_reward.py → test/fixtures/scope-reward.json), and the cases the fixture
 * does not cover (no-answer completions, missing inputs, reproducible draws).
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { averageStepConfidence, chooseSubgroupSize, scopeReward, type SubgroupCandidate } from './scope.js';
import { makeRewardInput, type RewardInput } from './types.js';

interface Fixture {
  confidence: { tokens: string[]; logprobs: number[]; confidence: number }[];
  vote: { answers: string[]; confidence: number[]; labels: string[]; scores: number[] };
  pareto: { candidates: SubgroupCandidate[]; lambda: number; chosen: number }[];
}
const fixture: Fixture = JSON.parse(
  readFileSync(new URL('../../test/fixtures/scope-reward.json', import.meta.url), 'utf8'),
);

/** One step's inputs: groups of completions `\boxed{answer}` (null: no answer), one token each with logprob −confidence. */
function batch(groups: { answers: (string | null)[]; confidence: number[] }[], step = 0): RewardInput[] {
  return groups.flatMap(({ answers, confidence }) => {
    const texts = answers.map((answer) => (answer === null ? 'no idea' : `\\boxed{${answer}}`));
    return texts.map((completion, indexInGroup) =>
      makeRewardInput({
        completion,
        completionIds: [indexInGroup],
        completionTokenTexts: [completion],
        policyLogprobs: [-confidence[indexInGroup]!],
        group: texts,
        indexInGroup,
        step,
      }),
    );
  });
}

describe('SCOPE step-wise confidence (myutils.py calculate_avg_step_conf)', () => {
  it.each(fixture.confidence)('fixture case %#', ({ tokens, logprobs, confidence }) => {
    const input = makeRewardInput({
      completion: tokens.join(''),
      completionIds: tokens.map((_, t) => t),
      completionTokenTexts: tokens,
      policyLogprobs: logprobs,
    });
    expect(averageStepConfidence(input)).toBeCloseTo(confidence, 12);
  });

  it('leaves tokens without a policy logprob (tool output) out of their step', () => {
    const input = makeRewardInput({
      completion: 'ab\n\nc',
      completionIds: [1, 2, 3],
      completionTokenTexts: ['a', 'b\n\n', 'c'],
      policyLogprobs: [-1, Number.NaN, -3],
    });
    expect(averageStepConfidence(input)).toBe(2); // steps [1] and [3]
  });

  it('names the missing field when grpo train did not give the token texts', () => {
    const input = makeRewardInput({ completion: 'ab', completionIds: [1, 2], policyLogprobs: [-1, -2] });
    expect(() => averageStepConfidence(input)).toThrow(/completionTokenTexts/);
  });
});

describe('SCOPE Pareto choice of the subgroup size (ray_trainer.py search_params)', () => {
  it.each(fixture.pareto)('fixture case %# (λ = $lambda)', ({ candidates, lambda, chosen }) => {
    expect(chooseSubgroupSize(candidates, lambda)).toBe(chosen);
  });
});

describe('scopeReward', () => {
  it("weights the vote by confidence: the authors' labels and scores (a vote over the whole group)", () => {
    const { answers, confidence, scores } = fixture.vote;
    const reward = scopeReward({ votesPerSubgroup: 4 });
    const inputs = batch([
      { answers: answers.slice(0, 4), confidence: confidence.slice(0, 4) },
      { answers: answers.slice(4), confidence: confidence.slice(4) },
    ]);
    // 4 has three votes to 5's one, but 5 weighs 0.9 to 0.6: TTRL's majority vote would score [1, 1, 1, 0]
    expect(reward.scoreBatch(inputs)).toEqual(scores);
    expect(scores.slice(0, 4)).toEqual([0, 0, 0, 1]);
  });

  it('a completion without an answer does not vote, and each answer weighs its own confidence', () => {
    // The authors' zip would give 4 the no-answer sample's weight 5 and label 4; here 5 (0.3) beats 4 (0.2).
    const inputs = batch([{ answers: [null, '4', '5'], confidence: [5, 0.2, 0.3] }]);
    expect(scopeReward({ votesPerSubgroup: 3 }).scoreBatch(inputs)).toEqual([0, 0, 1]);
  });

  it('a group with no answer at all scores 0 everywhere', () => {
    const inputs = batch([{ answers: [null, null], confidence: [1, 1] }]);
    expect(scopeReward().scoreBatch(inputs)).toEqual([0, 0]);
  });

  it('one answer in a vote needs no confidence: a held-out group of one scores without logprobs', () => {
    const alone = (completion: string) => makeRewardInput({ completion, completionIds: [1, 2] });
    expect(scopeReward().scoreBatch([alone('\\boxed{3}')])).toEqual([1]);
    expect(scopeReward().scoreBatch([alone('nothing')])).toEqual([0]);
  });

  it('draws the subgroup votes from a seed and the step: the same step scores the same, every score 0 or 1', () => {
    const answers = ['1', '2', '2', '3', '3', '3', '4', '1'];
    const confidence = [0.5, 0.4, 0.3, 0.2, 0.6, 0.1, 0.9, 0.8];
    const reward = scopeReward({ votesPerSubgroup: 3 });
    const first = reward.scoreBatch(batch([{ answers, confidence }], 7)) as number[];
    expect(reward.scoreBatch(batch([{ answers, confidence }], 7))).toEqual(first);
    for (const score of first) expect([0, 1]).toContain(score);
    const draws = new Set(
      Array.from({ length: 20 }, (_, step) =>
        JSON.stringify(reward.scoreBatch(batch([{ answers, confidence }], step))),
      ),
    );
    expect(draws.size).toBeGreaterThan(1); // the draw changes with the step
  });

  it('refuses a batch that is not whole groups', () => {
    const inputs = batch([{ answers: ['1', '2'], confidence: [1, 1] }]).slice(1);
    expect(() => scopeReward().scoreBatch(inputs)).toThrow(/not whole groups/);
  });
});
