/**
 * The step batch and its signal on hand-made batches: concatenating kept group selections copies
 * exactly those rows, strata and answer clusters come out as defined, and the loss mask combines the
 * estimator's keep, failed rewards, the filter's sample mask and truncation.
 */
import { describe, expect, it } from 'vitest';
import { bindAlgorithm } from '../config/algorithm.js';
import type { RolloutSample } from '../rollout/rollout.js';
import { resolveConfig } from './setup.js';
import { concatenateGroups, groupIndexOf, sampleRows, type StepBatch } from './step-batch.js';
import { clustersOf, computeSignal, strataOf } from './step-signal.js';

function sample(promptIndex: number, text: string, truncated = false): RolloutSample {
  return {
    promptIndex,
    completionIds: [1, 2],
    oldLogprobs: [-1, -1],
    lossMask: [1, 1],
    text,
    truncated,
    toolCalls: text.length % 2,
  };
}

function batch(rewards: (number | null)[], groupSizes: number[], texts?: string[]): StepBatch {
  const groups = groupIndexOf(groupSizes);
  return {
    prompts: groupSizes.map((_, g) => ({
      example: { prompt: `p${g}`, answer: '1', level: g % 2 ? 'hard' : 'easy' },
      promptIds: [5, g],
      exampleIndex: 10 + g,
    })),
    groupSizes,
    samples: rewards.map((_, i) => sample(groups[i], texts?.[i] ?? `t${i}`)),
    rewardNames: ['r'],
    scores: Float64Array.from(rewards, (r) => r ?? NaN),
    rewardWeights: [1],
    rewards: Float64Array.from(rewards, (r) => r ?? NaN),
    valid: Uint8Array.from(rewards, (r) => (r === null ? 0 : 1)),
    failures: { r: 0 },
    errors: rewards.map(() => null),
  };
}

const bound = (algorithm: Record<string, unknown>) =>
  bindAlgorithm(resolveConfig({ algorithm }), {
    sampleRows: [{ prompt: 'x', level: 'easy' }],
    rolloutProvides: ['toolCalls'],
    rewardNames: [],
  });

describe('step batch', () => {
  it('concatenates the kept groups of several rounds, in order, copying only their rows', () => {
    const first = batch([1, 0, 0, 0, 1, 1], [2, 2, 2]);
    const second = batch([0.5, 0.25], [2]);
    const joined = concatenateGroups([
      { batch: first, groupIndices: [0, 2] },
      { batch: second, groupIndices: [0] },
    ]);
    expect(joined.groupSizes).toEqual([2, 2, 2]);
    expect(Array.from(joined.rewards)).toEqual([1, 0, 1, 1, 0.5, 0.25]);
    expect(joined.prompts.map((p) => p.example.prompt)).toEqual(['p0', 'p2', 'p0']);
    expect(joined.samples.map((s) => s.text)).toEqual(['t0', 't1', 't4', 't5', 't0', 't1']);
    // each sample points at its group in the joined batch, so its trained row has its own prompt
    expect(joined.samples.map((s) => s.promptIndex)).toEqual([0, 0, 1, 1, 2, 2]);
    expect(joined.samples.map((_, i) => sampleRows(joined, i)[0].promptIds)).toEqual([
      [5, 0],
      [5, 0],
      [5, 2],
      [5, 2],
      [5, 0],
      [5, 0],
    ]);
  });

  it('strata from a row column or a rollout statistic; clusters by equivalent final answers', () => {
    const b = batch([1, 0, 1, 0], [2, 2], ['the answer is 1/2', 'so \\boxed{0.5}', 'no idea', 'x']);
    expect(strataOf(b, { kind: 'row', column: 'level' })).toEqual(['easy', 'easy', 'hard', 'hard']);
    expect(strataOf(b, { kind: 'rollout', statistic: 'toolCalls' })).toEqual(['1', '0', '1', '1']);
    const clusters = clustersOf(b, 'answer');
    expect(clusters[0]).toBe(clusters[1]); // 1/2 and 0.5 are the same answer
    expect(clusters[2]).not.toBe(clusters[3]); // no extractable answer: each alone
  });

  it('the loss mask: failed rewards, the filter sample mask and truncation leave the loss', () => {
    const b = batch([1, null, 0, 1, 0, 0], [3, 3]);
    b.samples[3].truncated = true;
    const plain = computeSignal(bound({}), b);
    expect(Array.from(plain.keep)).toEqual([1, 0, 1, 1, 1, 1]);
    const masked = computeSignal(bound({ maskTruncated: true }), b);
    expect(Array.from(masked.keep)).toEqual([1, 0, 1, 0, 1, 1]);
    const filtered = computeSignal(bound({ groupFilter: 'mask-truncated' }), b);
    expect(Array.from(filtered.keep)).toEqual([1, 0, 1, 0, 1, 1]);
    const stratified = computeSignal(
      bound({ advantage: 'stratified', advantageOptions: { alpha: 1, strataFrom: 'rollout.toolCalls' } }),
      b,
    );
    expect(stratified.advantages.length).toBe(6);
  });

  it('KL penalties are subtracted from the rewards the estimator sees', () => {
    const b = batch([1, 0], [2]);
    const signal = computeSignal(bound({ advantage: 'dr-grpo' }), b, { klPenalties: Float64Array.from([0.5, 0]) });
    expect(Array.from(signal.rewards)).toEqual([0.5, 0]);
    expect(Array.from(signal.advantages)).toEqual([0.25, -0.25]);
  });
});
