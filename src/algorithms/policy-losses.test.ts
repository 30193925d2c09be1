/**
 * Tests of the token-level policy losses: the ALGORITHMS.md §2.1–§2.5, §2.10, §2.12, §2.13 vectors
 * (objective values and the gradient with respect to log π_θ, zero where the clip binds and full
 * where it does not) and finite-difference gradient checks on random batches. Input errors and
 * padding: policy-losses-inputs.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { type Tensor, tensor } from '../tensor/index.js';
import { gradCheck } from '../testing/gradcheck.js';
import { type PolicyLossFn, type PolicyLossInput, mismatchWeights, topEntropyMask } from './policy-losses-common.js';
import { cispoLoss, dispoLoss, gtpoLoss, ppoClipLoss, reinforceLoss } from './policy-losses.js';
import { gtpoEntropyFilter, gtpoTokenWeights } from './policy-losses-gtpo.js';

/** One token with ratio ρ and advantage A: returns the loss and d loss / d logπ. */
function singleToken(
  loss: PolicyLossFn,
  ratio: number,
  advantage: number,
  options = {},
): { value: number; gradient: number } {
  const logprobs = tensor([Math.log(ratio) - 1], [1, 1], { requiresGrad: true });
  const result = loss({ logprobs, oldLogprobs: [-1], advantages: [advantage], mask: [1] }, options);
  result.loss.backward();
  return { value: result.loss.item(), gradient: (logprobs.grad as Tensor).data[0] + 0 }; // + 0 turns −0 into 0
}

describe('§2.1 PPO/GRPO clipped surrogate (ε = 0.2)', () => {
  it('(ρ=1.5, A=+1): objective 1.2, clipped, gradient 0', () => {
    const { value, gradient } = singleToken(ppoClipLoss, 1.5, 1);
    expect(value).toBeCloseTo(-1.2, 6);
    expect(gradient).toBe(0);
  });
  it('(ρ=0.5, A=−1): objective −0.8, clipped, gradient 0', () => {
    const { value, gradient } = singleToken(ppoClipLoss, 0.5, -1);
    expect(value).toBeCloseTo(0.8, 6);
    expect(gradient).toBe(0);
  });
  it('(ρ=1.5, A=−1): objective −1.5, unclipped, gradient −ρA = 1.5', () => {
    const { value, gradient } = singleToken(ppoClipLoss, 1.5, -1);
    expect(value).toBeCloseTo(1.5, 6);
    expect(gradient).toBeCloseTo(1.5, 5);
  });
  it('on-policy (ρ=1) the gradient is the full −A, not split away at the tie', () => {
    expect(singleToken(ppoClipLoss, 1, 0.7).gradient).toBeCloseTo(-0.7, 6);
  });
  it('dual-clip caps the loss of A<0 tokens at −c·A with zero gradient there', () => {
    const capped = singleToken(ppoClipLoss, 4, -1, { dualClip: 3 });
    expect(capped.value).toBeCloseTo(3, 5);
    expect(capped.gradient).toBe(0);
    const below = singleToken(ppoClipLoss, 2, -1, { dualClip: 3 });
    expect(below.value).toBeCloseTo(2, 5);
    expect(below.gradient).toBeCloseTo(2, 5);
  });
  it('clip fractions report which side bound', () => {
    const logprobs = tensor([Math.log(1.5), Math.log(0.5), 0, Math.log(1.5)], [1, 4], { requiresGrad: true });
    const { metrics } = ppoClipLoss({
      logprobs,
      oldLogprobs: [0, 0, 0, 0],
      advantages: [1, -1, 1, -1],
      mask: [1, 1, 1, 1],
    });
    expect(metrics.clipFractionHigh).toBeCloseTo(0.25, 6);
    expect(metrics.clipFractionLow).toBeCloseTo(0.25, 6);
    expect(metrics.clipFraction).toBeCloseTo(0.5, 6);
    expect(metrics.ratioMax).toBeCloseTo(1.5, 5);
    expect(metrics.ratioMin).toBeCloseTo(0.5, 5);
  });
});

describe('§2.2 DAPO clip-higher', () => {
  it('(ρ=1.25, A=+1): 1.2 with no gradient symmetric, 1.25 with gradient at ε_high = 0.28', () => {
    const symmetric = singleToken(ppoClipLoss, 1.25, 1);
    expect(symmetric.value).toBeCloseTo(-1.2, 6);
    expect(symmetric.gradient).toBe(0);
    const higher = singleToken(ppoClipLoss, 1.25, 1, { epsilonHigh: 0.28 });
    expect(higher.value).toBeCloseTo(-1.25, 6);
    expect(higher.gradient).toBeCloseTo(-1.25, 5);
  });
});

describe('§2.4 CISPO and §2.5 DISPO', () => {
  it('ρ=1.5, A=+1, ε_high=0.28 relative: weight 1.28, gradient −1.28; PPO gives 0', () => {
    expect(singleToken(cispoLoss, 1.5, 1, { epsilonHigh: 0.28 }).gradient).toBeCloseTo(-1.28, 5);
    expect(singleToken(ppoClipLoss, 1.5, 1).gradient).toBe(0);
  });
  it('absolute cap (ScaleRL): min(ρ, 5)', () => {
    expect(singleToken(cispoLoss, 6, 1, { capMode: 'absolute' }).gradient).toBeCloseTo(-5, 4);
    expect(singleToken(cispoLoss, 3, -1, { capMode: 'absolute' }).gradient).toBeCloseTo(3, 4);
    expect(singleToken(cispoLoss, 0.1, 1, { capMode: 'absolute' }).gradient).toBeCloseTo(-0.1, 5);
  });
  it('DISPO with four equal bounds and maskOutside=false is CISPO; maskOutside zeroes out-of-bound tokens', () => {
    const bounds: [number, number] = [0.2, 0.28];
    for (const [ratio, advantage] of [
      [1.5, 1],
      [0.5, -1],
      [1.1, 1],
      [0.7, 1],
      [1.4, -1],
    ]) {
      const dispo = singleToken(dispoLoss, ratio, advantage, { positiveBounds: bounds, negativeBounds: bounds });
      const cispo = singleToken(cispoLoss, ratio, advantage, { epsilonLow: 0.2, epsilonHigh: 0.28 });
      expect(dispo.gradient).toBeCloseTo(cispo.gradient, 6);
      expect(dispo.value).toBeCloseTo(cispo.value, 6);
    }
    expect(
      singleToken(dispoLoss, 1.5, 1, { positiveBounds: bounds, negativeBounds: bounds, maskOutside: true }).gradient,
    ).toBe(0);
    expect(
      singleToken(dispoLoss, 1.1, 1, { positiveBounds: bounds, negativeBounds: bounds, maskOutside: true }).gradient,
    ).toBeCloseTo(-1.1, 5);
    // Separate bounds for negative tokens: ρ = 1.4 with A < 0 sits inside a wide negative band.
    expect(
      singleToken(dispoLoss, 1.4, -1, { positiveBounds: bounds, negativeBounds: [0.2, 0.5], maskOutside: true })
        .gradient,
    ).toBeCloseTo(1.4, 5);
    expect(() => singleToken(dispoLoss, 1, 1)).toThrow(/needs options.positiveBounds/);
  });
});

describe('REINFORCE and GTPO', () => {
  it('on-policy REINFORCE: value −A, gradient −A whatever oldLogprobs says', () => {
    const result = singleToken(reinforceLoss, 3, 0.5);
    expect(result.value).toBeCloseTo(-0.5, 6);
    expect(result.gradient).toBeCloseTo(-0.5, 6);
  });
  it('§2.10 conflict-token weights: positive [5,7,9] and negative [5,8,9]', () => {
    const weights = gtpoTokenWeights(
      [
        [5, 7, 9],
        [5, 8, 9],
      ],
      [1, -1],
      2,
    );
    expect([...weights[0]]).toEqual([2, 1, 2]);
    expect([...weights[1]]).toEqual([0, 1, 0]);
    expect([
      ...gtpoTokenWeights(
        [
          [5, 7, 9],
          [5, 8, 9],
        ],
        [1, -1],
        2,
        { direction: 'forward' },
      )[0],
    ]).toEqual([2, 1, 1]);
    // Only leading/trailing runs count: a match after a mismatch is not a conflict token.
    expect([
      ...gtpoTokenWeights(
        [
          [1, 2, 3, 4],
          [1, 9, 3, 8],
        ],
        [1, -1],
        2,
      )[0],
    ]).toEqual([2, 1, 1, 1]);
  });
  it('§2.10 entropy filter and the weighted loss −Σ_t ρAδ/|o|', () => {
    expect([...gtpoEntropyFilter([1, 1], [0.8, 0.5])].map((a) => Number(a.toFixed(6)))).toEqual([0, 0.95]);
    const logprobs = tensor([-1, -1, -1, -1, -1, -1], [2, 3], { requiresGrad: true });
    const tokenWeights = new Float32Array([2, 1, 2, 0, 1, 0]);
    const { loss } = gtpoLoss({
      logprobs,
      oldLogprobs: new Float32Array(6).fill(-1),
      advantages: [1, -1],
      mask: new Float32Array(6).fill(1),
      tokenWeights,
    });
    loss.backward();
    expect(loss.item()).toBeCloseTo(-(5 / 3 - 1 / 3) / 2, 6);
    expect([...(logprobs.grad as Tensor).data].map((g) => Number(g.toFixed(6)))).toEqual(
      [-2, -1, -2, 0, 1, 0].map((g) => Number((g / 6).toFixed(6))),
    );
  });
});

describe('§2.12 mismatch correction and §2.13 entropy selection', () => {
  it('TIS truncates, MIS masks; per token or per sequence', () => {
    const old = [0, 0, 0, 0];
    const rollout = [-Math.log(3), -Math.log(1.5), 0, Math.log(2)];
    const mask = [1, 1, 1, 1];
    expect(
      [...mismatchWeights(old, rollout, mask, 2, 2, { mode: 'truncate', level: 'token' })].map((w) =>
        Number(w.toFixed(5)),
      ),
    ).toEqual([2, 1.5, 1, 0.5]);
    expect(
      [...mismatchWeights(old, rollout, mask, 2, 2, { mode: 'mask', level: 'token' })].map((w) => Number(w.toFixed(5))),
    ).toEqual([0, 1.5, 1, 0.5]);
    // Sequence 0's ratio is 3·1.5 = 4.5 > 2: masked as a whole; sequence 1's is 0.5.
    expect(
      [...mismatchWeights(old, rollout, mask, 2, 2, { mode: 'mask', level: 'sequence' })].map((w) =>
        Number(w.toFixed(5)),
      ),
    ).toEqual([0, 0, 0.5, 0.5]);
  });
  it('mismatch weights scale the per-token gradient', () => {
    const logprobs = tensor([0, 0], [1, 2], { requiresGrad: true });
    const { loss, metrics } = reinforceLoss(
      { logprobs, oldLogprobs: [0, 0], advantages: [1], mask: [1, 1], rolloutLogprobs: [-Math.log(3), 0] },
      { mismatchCorrection: { mode: 'truncate', level: 'token' } },
    );
    loss.backward();
    expect([...(logprobs.grad as Tensor).data].map((g) => Number(g.toFixed(5)))).toEqual([-1, -0.5]);
    expect(metrics.mismatchWeightMean).toBeCloseTo(1.5, 5);
  });
  it('entropies [0.1, 2.0, 0.3, 1.5, 0.2] at ρ=0.4 keep positions 2 and 4 (1-based)', () => {
    expect([...topEntropyMask([0.1, 2.0, 0.3, 1.5, 0.2], [1, 1, 1, 1, 1], 0.4)]).toEqual([0, 1, 0, 1, 0]);
    const logprobs = tensor([0, 0, 0, 0, 0], [1, 5], { requiresGrad: true });
    const { loss } = reinforceLoss(
      {
        logprobs,
        oldLogprobs: [0, 0, 0, 0, 0],
        advantages: [1],
        mask: [1, 1, 1, 1, 1],
        entropies: [0.1, 2.0, 0.3, 1.5, 0.2],
      },
      { topEntropyQuantile: 0.4 },
    );
    loss.backward();
    expect([...(logprobs.grad as Tensor).data].map((g) => Number(g.toFixed(6)))).toEqual([0, -0.2, 0, -0.2, 0]);
  });
});

/** A random [B, T] batch whose ratios stay ≥ 0.05 away from the clip bounds 0.8/1.2 and from ρ·A ties. */
function randomBatch(seed: number, B = 3, T = 4): PolicyLossInput {
  let state = seed;
  const random = (): number => (state = (state * 1103515245 + 12345) % 2147483648) / 2147483648;
  const ratios = [0.6, 0.9, 1.1, 1.4, 0.7, 1.05, 1.3, 0.95];
  const old = Float32Array.from({ length: B * T }, () => -0.5 - random());
  const current = old.map((o) => o + Math.log(ratios[Math.floor(random() * ratios.length)]));
  const mask = Float32Array.from({ length: B * T }, (_, i) => (i % T < T - (((i / T) | 0) % 2) ? 1 : 0));
  return {
    logprobs: tensor(current, [B, T]),
    oldLogprobs: old,
    advantages: Float32Array.from({ length: B }, () => random() * 2 - 1),
    mask,
  };
}

describe('finite-difference gradients with respect to logprobs', () => {
  // Losses without stop-gradients: autograd must match central differences of the loss value.
  const smooth: [string, PolicyLossFn, object][] = [
    ['ppo-clip', ppoClipLoss, {}],
    ['ppo-clip clip-higher', ppoClipLoss, { epsilonHigh: 0.28 }],
    ['ppo-clip dual', ppoClipLoss, { dualClip: 1.2 }],
  ];
  for (const [name, loss, options] of smooth) {
    it(`${name} matches central differences, including clipped tokens`, () => {
      for (const seed of [1, 2, 3]) {
        const batch = randomBatch(seed);
        const result = gradCheck((logprobs) => loss({ ...batch, logprobs }, options).loss, [batch.logprobs], {
          epsilon: 1e-3,
          absoluteTolerance: 1e-3,
        });
        expect(result.checked).toBe(12);
      }
    });
  }
  // Stop-gradient losses (CISPO, DISPO, REINFORCE, GTPO): the value's derivative is not the
  // gradient by design, so compare with central differences of the frozen-weight surrogate
  // Σ_t agg_t·(−w_t·A·logπ_t), w evaluated at the base point.
  const frozen: [string, PolicyLossFn, object, (ratio: number, advantage: number) => number, boolean][] = [
    ['cispo', cispoLoss, { epsilonLow: 0.2, epsilonHigh: 0.2 }, (r) => Math.min(Math.max(r, 0.8), 1.2), false],
    [
      'dispo maskOutside',
      dispoLoss,
      { positiveBounds: [0.2, 0.2], negativeBounds: [0.3, 0.1], maskOutside: true },
      (r, a) => ((a > 0 ? r >= 0.8 && r <= 1.2 : r >= 0.7 && r <= 1.1) ? r : 0),
      false,
    ],
    ['reinforce', reinforceLoss, {}, () => 1, false],
    ['gtpo', gtpoLoss, {}, () => 1, true],
  ];
  for (const [name, loss, options, weightOf, perSequenceMean] of frozen) {
    it(`${name} matches central differences of its frozen-weight surrogate`, () => {
      for (const seed of [1, 2, 3]) {
        const batch = randomBatch(seed);
        const old = batch.oldLogprobs as Float32Array;
        const mask = batch.mask as Float32Array;
        const advantages = batch.advantages as Float32Array;
        const base = Float32Array.from(batch.logprobs.data);
        const rowCounts = [0, 1, 2].map((b) => mask.subarray(b * 4, b * 4 + 4).reduce((x, y) => x + y, 0));
        const aggregationWeight = (i: number): number =>
          perSequenceMean ? 1 / (rowCounts[Math.floor(i / 4)] * 3) : 1 / rowCounts.reduce((x, y) => x + y, 0);
        const coefficient = (i: number): number =>
          mask[i]
            ? -weightOf(Math.exp(base[i] - old[i]), advantages[Math.floor(i / 4)]) *
              advantages[Math.floor(i / 4)] *
              aggregationWeight(i)
            : 0;
        const surrogate = (x: Float32Array): number => x.reduce((total, value, i) => total + coefficient(i) * value, 0);
        batch.logprobs.requiresGrad = true;
        loss(batch, options).loss.backward();
        for (let i = 0; i < 12; i++) {
          const plus = Float32Array.from(base);
          const minus = Float32Array.from(base);
          plus[i] += 1e-3;
          minus[i] -= 1e-3;
          const numeric = (surrogate(plus) - surrogate(minus)) / 2e-3;
          expect((batch.logprobs.grad as Tensor).data[i], `${name} seed ${seed} token ${i}`).toBeCloseTo(numeric, 4);
        }
      }
    });
  }
  it('PPO: gradient is exactly 0 on clipped and masked tokens and −ρA/count elsewhere', () => {
    const batch = randomBatch(5);
    const logprobs = batch.logprobs;
    logprobs.requiresGrad = true;
    ppoClipLoss(batch).loss.backward();
    const count = [...(batch.mask as Float32Array)].reduce((a, b) => a + b, 0);
    let clippedTokens = 0;
    for (let i = 0; i < 12; i++) {
      const ratio = Math.exp(logprobs.data[i] - (batch.oldLogprobs as Float32Array)[i]);
      const advantage = (batch.advantages as Float32Array)[Math.floor(i / 4)];
      const clipped = (advantage > 0 && ratio > 1.2) || (advantage < 0 && ratio < 0.8);
      if (clipped && batch.mask[i]) clippedTokens++;
      const expected = !batch.mask[i] || clipped ? 0 : (-ratio * advantage) / count;
      expect((logprobs.grad as Tensor).data[i]).toBeCloseTo(expected, 6);
    }
    expect(clippedTokens).toBeGreaterThan(0);
  });
});
