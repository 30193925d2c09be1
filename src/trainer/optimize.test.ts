/**
 * The optimiser step's contract: micro-batched accumulation with global token, sequence and group
 * counts equals the whole batch in one pass (loss and gradients to 1e-6 relative) for every
 * aggregation and the group-level REAL loss, and the logged entropy bonus is the whole batch's; a lossMask-0 token gets exactly zero gradient; a
 * completion token with id 0 is a token, not padding; micro-batches keep groups whole on request.
 */
import { runnableLossOptions } from '../../test/helpers/loss-options.js';
import { describe, expect, it } from 'vitest';
import { lossAggregations, policyLosses } from '../algorithms/index.js';
import { createSmallConfig } from '../model/config.js';
import { Transformer } from '../model/transformer.js';
import { parameter, Random } from '../tensor/index.js';
import { bindAlgorithm } from '../config/algorithm.js';
import {
  accumulatePolicyGradients,
  lossTokenCount,
  microBatches,
  type StepSettings,
  trainingBatch,
  trainingRange,
  type TrainingRow,
} from './optimize.js';
import { resolveConfig } from './setup.js';

const model = Transformer.random(
  createSmallConfig({ vocabSize: 12, hiddenSize: 16, numLayers: 1, numHeads: 2, bosTokenId: 1, eosTokenIds: [2] }),
  3,
);

function samples(count: number, groupSize: number, seed: number): TrainingRow[] {
  const random = new Random(seed);
  return Array.from({ length: count }, (_, i) => {
    const length = 1 + random.integer(5);
    return {
      promptIds: [1, 3 + random.integer(8)],
      completionIds: Array.from({ length }, () => random.integer(12)), // id 0 occurs
      oldLogprobs: Array.from({ length }, () => -2.5 + 0.5 * random.uniform()),
      advantage: (i % 3) - 1 + 0.25 * random.uniform(),
      lossMask: Array.from({ length }, (_, t) => (t === 1 ? 0 : 1)),
      group: Math.floor(i / groupSize),
    };
  });
}

function run(algorithm: Record<string, unknown>, batch: TrainingRow[], microBatchSize: number) {
  const bound = bindAlgorithm(
    resolveConfig({ algorithm, grpo: { microBatchSize: 4, promptsPerStep: 4 }, sampling: { groupSize: 4 } }),
    { sampleRows: [], rolloutProvides: [], rewardNames: [] },
  );
  const settings: StepSettings = { microBatchSize, temperature: 1, maxNewTokens: 5, maxGradNorm: 0 };
  for (const p of model.parameters.values()) p.grad = null;
  const { lossTotal, metrics } = accumulatePolicyGradients(bound, settings, model, trainingBatch(batch));
  const gradients = [...model.parameters].map(([name, p]) => [name, p.grad!.data.slice()] as const);
  for (const p of model.parameters.values()) p.grad = null;
  return { lossTotal, gradients, metrics };
}

function expectClose(micro: ReturnType<typeof run>, whole: ReturnType<typeof run>): void {
  expect(Math.abs(micro.lossTotal - whole.lossTotal)).toBeLessThanOrEqual(
    1e-6 * Math.max(1, Math.abs(whole.lossTotal)),
  );
  whole.gradients.forEach(([name, expected], k) => {
    const actual = micro.gradients[k][1];
    const scale = Math.max(...Array.from(expected, Math.abs));
    expect(scale, `${name} has a gradient`).toBeGreaterThan(0);
    for (let i = 0; i < expected.length; i++)
      expect(Math.abs(actual[i] - expected[i]), `${name}[${i}]`).toBeLessThanOrEqual(1e-6 * scale);
  });
}

describe('micro-batched accumulation equals the whole batch in one pass', () => {
  const batch = samples(12, 4, 1);
  it.each(lossAggregations.names())('aggregation %s', (aggregation) => {
    expectClose(run({ aggregation }, batch, 5), run({ aggregation }, batch, 64));
  });
  it('the REAL loss with whole groups (global labelled-group count)', () => {
    expectClose(run({ loss: 'real' }, batch, 8), run({ loss: 'real' }, batch, 64));
  });
  it('the entropy bonus and top-entropy selection', () => {
    const algorithm = { entropyCoefficient: 0.1, lossOptions: { topEntropyQuantile: 0.4 } };
    expectClose(run(algorithm, batch, 3), run(algorithm, batch, 64));
  });
  it("the logged entropy bonus is the whole batch's, however many micro-batches", () => {
    // Each micro-batch's bonus is already its share of the global aggregate: the log sums them.
    const algorithm = { entropyCoefficient: 0.1 };
    const whole = run(algorithm, batch, 64).metrics['loss/entropyBonus'];
    const micro = run(algorithm, batch, 3).metrics['loss/entropyBonus'];
    expect(whole).toBeLessThan(0);
    expect(Math.abs(micro - whole)).toBeLessThanOrEqual(1e-6 * Math.abs(whole));
  });
});

describe('masks and padding', () => {
  it.each(policyLosses.names())('a lossMask-0 token gets exactly zero gradient from the %s loss', (name) => {
    const B = 4;
    const T = 3;
    const logprobs = parameter(
      Float32Array.from({ length: B * T }, (_, i) => -1 - 0.1 * i),
      [B, T],
    );
    const mask = Float32Array.from({ length: B * T }, (_, i) => (i % T === 1 ? 0 : 1));
    const options = runnableLossOptions(name);
    const result = policyLosses.get(name)(
      {
        logprobs,
        oldLogprobs: Float32Array.from({ length: B * T }, (_, i) => -1.05 - 0.1 * i),
        // the reference (TRPA reads it), garbage at the masked tokens
        refLogprobs: Float32Array.from({ length: B * T }, (_, i) => (mask[i] ? -0.9 - 0.1 * i : NaN)),
        advantages: Float32Array.from([1, -1, 0.5, -0.5]),
        mask,
        entropies: new Float32Array(B * T).fill(0.1),
        groupSizes: [2, 2],
      },
      options,
    );
    result.loss.backward();
    const gradient = logprobs.grad!.data;
    for (let i = 0; i < B * T; i++) {
      if (mask[i]) continue;
      expect(Object.is(gradient[i], 0) || Object.is(gradient[i], -0), `token ${i}`).toBe(true);
    }
    expect(Array.from(gradient).some((g, i) => mask[i] && g !== 0)).toBe(true);
  });

  it('a masked last token changes neither the loss nor any gradient, whatever its id', () => {
    const base = samples(4, 4, 2).map((s) => ({
      ...s,
      completionIds: [...s.completionIds, 5],
      oldLogprobs: [...Array.from(s.oldLogprobs), -2],
      lossMask: [...s.lossMask!, 0],
    }));
    const changed = base.map((s) => ({ ...s, completionIds: [...s.completionIds.slice(0, -1), 9] }));
    const first = run({}, base, 2);
    const second = run({}, changed, 2);
    expect(second.lossTotal).toBe(first.lossTotal);
    first.gradients.forEach(([name, gradient], k) =>
      expect(Array.from(second.gradients[k][1]), name).toEqual(Array.from(gradient)),
    );
  });

  it('token id 0 in a completion is a token, not padding', () => {
    expect(lossTokenCount({ promptIds: [1], completionIds: [0, 5, 0] })).toBe(3);
    expect(lossTokenCount({ promptIds: [1], completionIds: [0, 5, 0], lossMask: [1, 0, 1] })).toBe(2);
  });

  it("a micro-batch reads views of the batch's columns, not copies", () => {
    const batch = trainingBatch(samples(6, 3, 4));
    const micro = trainingRange(batch, 2, 5);
    expect(micro.oldLogprobs.buffer).toBe(batch.oldLogprobs.buffer);
    expect(micro.oldLogprobs.byteOffset).toBe(2 * batch.Tc * 4);
    expect(micro.oldLogprobs.length).toBe(3 * batch.Tc);
    expect(micro.advantage.buffer).toBe(batch.advantage.buffer);
    expect(Array.from(micro.group)).toEqual([0, 1, 1]);
    expect(micro.rows).toEqual(batch.rows.slice(2, 5));
  });

  it('micro-batches keep groups whole when asked, and refuse a group larger than the micro-batch', () => {
    const rows = [0, 0, 0, 1, 1, 2, 2, 2, 2];
    expect(microBatches(rows, 5, true)).toEqual([
      { start: 0, end: 5 },
      { start: 5, end: 9 },
    ]);
    expect(microBatches(rows, 4, true)).toEqual([
      { start: 0, end: 3 },
      { start: 3, end: 5 },
      { start: 5, end: 9 },
    ]);
    expect(microBatches(rows, 4, false)).toEqual([
      { start: 0, end: 4 },
      { start: 4, end: 8 },
      { start: 8, end: 9 },
    ]);
    expect(() => microBatches(rows, 3, true)).toThrow(/group 2 has 4 samples, more than grpo.microBatchSize 3/);
  });
});
