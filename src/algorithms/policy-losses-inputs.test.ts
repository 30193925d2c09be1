/**
 * Input handling shared by every registered policy loss: wrong sizes name the field, garbage on
 * padded tokens changes nothing, empty and all-masked rows give no NaN, and per-token (tree)
 * advantages drive a per-token gradient. The formula vectors are in policy-losses.test.ts.
 */
import { runnableLossOptions } from '../../test/helpers/loss-options.js';
import { describe, expect, it } from 'vitest';
import { type Tensor, tensor } from '../tensor/index.js';
import type { PolicyLossFn } from './policy-losses-common.js';
import { ppoClipLoss } from './policy-losses.js';
import { policyLosses } from './index.js';
import { treeAdvantage } from './advantages-tree.js';
import { padTokenAdvantages } from './advantages-groups.js';

/** Every registered loss with options that make it runnable on a generic batch. */
const everyLoss: [string, PolicyLossFn, object][] = policyLosses
  .list()
  .map((entry) => [entry.name, entry.fn, runnableLossOptions(entry.name)]);
/** The reference log-probs a loss that declares the need gets (trpa), with `pad` at the padded token 2. */
const needsReference = new Set(
  policyLosses
    .list()
    .filter((entry) => entry.needs?.includes('referenceLogprobs'))
    .map((entry) => entry.name),
);
const referenceFor = (name: string, pad: number) =>
  needsReference.has(name) ? { refLogprobs: [-1.05, pad, -1.95, -1.1] } : {};

describe('input errors and padding', () => {
  it('names the field with the wrong size', () => {
    const logprobs = tensor([0, 0, 0, 0], [2, 2], { requiresGrad: true });
    expect(() => ppoClipLoss({ logprobs, oldLogprobs: [0, 0, 0], advantages: [1, 1], mask: [1, 1, 1, 1] })).toThrow(
      /input.oldLogprobs has 3 entries, expected 4/,
    );
    expect(() =>
      ppoClipLoss({ logprobs, oldLogprobs: [0, 0, 0, 0], advantages: [1, 1, 1], mask: [1, 1, 1, 1] }),
    ).toThrow(/input.advantages \(per token\) has 3 entries/);
    expect(() => ppoClipLoss({ logprobs, oldLogprobs: [0, 0, 0, 0], advantages: [1, 1], mask: [1, 1] })).toThrow(
      /input.mask has 2 entries/,
    );
    expect(() =>
      ppoClipLoss({ logprobs, oldLogprobs: [0, 0, 0, 0], advantages: [1, NaN], mask: [1, 1, 1, 1] }),
    ).toThrow(/advantages is not finite at token 2/);
    expect(() =>
      ppoClipLoss(
        { logprobs, oldLogprobs: [0, 0, 0, 0], advantages: [1, 1], mask: [1, 1, 1, 1] },
        { klCoefficient: 0.1 },
      ),
    ).toThrow(/needs input.refLogprobs/);
  });
  it('garbage log-probs on padded tokens neither change the loss nor get gradient', () => {
    const make = (padValue: number) => tensor([-1, padValue, -2, -1], [2, 2], { requiresGrad: true });
    const input = { oldLogprobs: [-1.1, 0, -1.9, -1], advantages: [1, -0.5], mask: [1, 0, 1, 1], groupSizes: 2 };
    for (const [name, loss, options] of everyLoss) {
      const clean = make(0);
      const lossClean = loss({ ...input, ...referenceFor(name, 0), logprobs: clean }, options).loss;
      lossClean.backward();
      for (const padValue of [60, -Infinity, NaN]) {
        const noisy = make(padValue);
        const lossNoisy = loss(
          {
            ...input,
            ...referenceFor(name, padValue),
            logprobs: noisy,
            oldLogprobs: [-1.1, -Infinity, -1.9, -1],
            advantages: [1, -0.5],
          },
          options,
        ).loss;
        lossNoisy.backward();
        expect(lossNoisy.item(), `${name} pad ${padValue}`).toBe(lossClean.item());
        expect((noisy.grad as Tensor).data[1], `${name} pad ${padValue}`).toBe(0);
        [0, 2, 3].forEach((i) => expect((noisy.grad as Tensor).data[i]).toBe((clean.grad as Tensor).data[i]));
      }
    }
  });
  it('a row with an empty completion contributes nothing and gives no NaN', () => {
    for (const [name, loss, options] of everyLoss) {
      const logprobs = tensor([-1, -2, -1.5, -0.5], [2, 2], { requiresGrad: true });
      const { loss: value } = loss(
        {
          logprobs,
          oldLogprobs: [-1.1, -1.9, 0, 0],
          advantages: [0.8, -0.3],
          mask: [1, 1, 0, 0],
          groupSizes: 2,
          ...(needsReference.has(name) ? { refLogprobs: [-1, -2, 0, 0] } : {}),
        },
        options,
      );
      value.backward();
      expect(Number.isFinite(value.item()), name).toBe(true);
      expect(
        [...(logprobs.grad as Tensor).data].slice(2).map((g) => g + 0),
        name,
      ).toEqual([0, 0]);
    }
  });
  it('an all-masked batch gives loss 0 and no NaN', () => {
    const logprobs = tensor([0, 0], [2, 1], { requiresGrad: true });
    const { loss } = ppoClipLoss({ logprobs, oldLogprobs: [0, 0], advantages: [1, 1], mask: [0, 0] });
    loss.backward();
    expect(loss.item()).toBe(0);
    expect([...(logprobs.grad as Tensor).data].map((g) => g + 0)).toEqual([0, 0]);
  });
});

describe('token-level advantages', () => {
  it('tree advantages padded to [B, T] drive a per-token gradient −A_t/count on-policy', () => {
    const completionIds = [[1, 10], [1, 11, 12], [2]];
    const { tokenAdvantages } = treeAdvantage({ rewards: [1, 0, 0], groupSizes: 3, completionIds });
    const advantages = padTokenAdvantages(tokenAdvantages as Float32Array[], 3);
    const mask = [1, 1, 0, 1, 1, 1, 1, 0, 0];
    const logprobs = tensor(new Float32Array(9).fill(-1), [3, 3], { requiresGrad: true });
    ppoClipLoss({ logprobs, oldLogprobs: new Float32Array(9).fill(-1), advantages, mask }).loss.backward();
    (logprobs.grad as Tensor).data.forEach((g, i) => expect(g + 0).toBeCloseTo(mask[i] ? -advantages[i] / 6 : 0, 6));
    expect(advantages[0]).not.toBe(advantages[1]); // shared segment vs leaf: the advantage really varies per token
  });
});
