/**
 * Tests of the LLDS loss (#188): value and gradient against the float64 torch reference written from
 * the authors' dp_actor.py (scripts/reference/llds.py → test/fixtures/llds.json) for both gates, per
 * sequence and per token advantages; the gate by hand on one row; central differences of the whole
 * loss; on-policy (no displacement: exactly ppo-clip); micro-batches adding up; and the option checks.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { type Tensor, tensor } from '../tensor/index.js';
import { parsePartOptions, policyLosses } from './index.js';
import { ppoClipLoss } from './policy-losses.js';
import { type LldsLossOptions, lldsLoss, lldsTokenWeights } from './policy-losses-llds.js';

interface LldsCase {
  name: string;
  options: LldsLossOptions & { epsilonLow?: number; epsilonHigh?: number };
  perTokenAdvantages: number[] | null;
  value: number;
  gradient: number[];
}
const fixture = JSON.parse(readFileSync(new URL('../../test/fixtures/llds.json', import.meta.url), 'utf8')) as {
  batch: { oldLogprobs: number[][]; logRatio: number[][]; mask: number[][]; advantages: number[] };
  cases: LldsCase[];
};
const [B, T] = [6, 8];
const old = fixture.batch.oldLogprobs.flat();
const current = fixture.batch.logRatio.flat().map((r, i) => old[i] + r);

function input(advantages: number[] = fixture.batch.advantages, values: number[] = current) {
  return {
    logprobs: tensor(values, [B, T], { requiresGrad: true }),
    oldLogprobs: old,
    advantages,
    mask: fixture.batch.mask.flat(),
  };
}

describe('llds loss against the torch reference of the authors’ update_policy', () => {
  it.each(fixture.cases)('$name', (referenceCase) => {
    const batch = input(referenceCase.perTokenAdvantages ?? undefined);
    const { loss } = lldsLoss(batch, referenceCase.options);
    loss.backward();
    expect(loss.item()).toBeCloseTo(referenceCase.value, 6);
    const gradient = (batch.logprobs.grad as Tensor).data;
    referenceCase.gradient.forEach((g, i) => expect(gradient[i], `token ${i}`).toBeCloseTo(g, 6));
  });

  it('the two gates differ where the paper says: action by action, or the whole response', () => {
    // Row 0 (A = 0.8): action [0, 3) lost likelihood (drop 0.4), action [5, 8) gained (drop −0.14) but its
    // token 6 fell; the row lost overall. Row 2 (A = 1.2): only its middle action [3] lost.
    const mask = fixture.batch.mask.flat();
    const advantages = Array.from({ length: B * T }, (_, i) => fixture.batch.advantages[Math.floor(i / T)]);
    const action = lldsTokenWeights(current, old, advantages, mask, B, T, 'action');
    const response = lldsTokenWeights(current, old, advantages, mask, B, T, 'response');
    expect(Array.from(action.slice(0, 8))).toEqual([1, 1, 0, 0, 0, 0, 0, 0]);
    expect(Array.from(response.slice(0, 8))).toEqual([1, 1, 0, 0, 0, 0, 1, 0]);
    expect(Array.from(action.slice(16, 24))).toEqual([0, 0, 0, 1, 0, 0, 0, 0]);
    expect(Array.from(response.slice(16, 24))).toEqual([0, 0, 0, 0, 0, 0, 0, 0]);
    // Negative-advantage rows are never penalised.
    expect(Array.from(action.slice(8, 16)).every((w) => w === 0)).toBe(true);
  });

  it('central differences of the whole loss (gates and clip re-evaluated) match its gradient', () => {
    const batch = input();
    lldsLoss(batch, { likelihoodCoefficient: 1 }).loss.backward();
    const gradient = (batch.logprobs.grad as Tensor).data;
    const h = 1e-3;
    const mask = fixture.batch.mask.flat();
    for (let i = 0; i < B * T; i++) {
      if (!mask[i]) continue;
      const at = (delta: number) => {
        const shifted = [...current];
        shifted[i] += delta;
        return lldsLoss(input(undefined, shifted), { likelihoodCoefficient: 1 }).loss.item();
      };
      expect(Math.abs((at(h) - at(-h)) / (2 * h) - gradient[i]), `token ${i}`).toBeLessThan(2e-4);
    }
  });

  it('on-policy (logπ = logπ_old) there is no displacement: the loss and gradient are ppo-clip’s', () => {
    const batch = input(undefined, old);
    const reference = input(undefined, old);
    const result = lldsLoss(batch);
    result.loss.backward();
    ppoClipLoss(reference).loss.backward();
    expect(result.metrics.likelihoodDisplacement).toBe(0);
    expect(result.metrics.likelihoodPenalizedFraction).toBe(0);
    expect(Array.from((batch.logprobs.grad as Tensor).data)).toEqual(
      Array.from((reference.logprobs.grad as Tensor).data),
    );
  });

  it('micro-batches with the global token count add up to the batch', () => {
    const whole = input();
    const wholeLoss = lldsLoss(whole).loss;
    wholeLoss.backward();
    const tokens = fixture.batch.mask.flat().reduce((a, b) => a + b, 0);
    let total = 0;
    const parts: number[] = [];
    for (const rows of [
      [0, 3],
      [3, 6],
    ]) {
      const slice = (values: number[]) => values.slice(rows[0] * T, rows[1] * T);
      const part = {
        logprobs: tensor(slice(current), [rows[1] - rows[0], T], { requiresGrad: true }),
        oldLogprobs: slice(old),
        advantages: fixture.batch.advantages.slice(rows[0], rows[1]),
        mask: slice(fixture.batch.mask.flat()),
      };
      const loss = lldsLoss(part, { globalTokenCount: tokens }).loss;
      loss.backward();
      total += loss.item();
      parts.push(...(part.logprobs.grad as Tensor).data);
    }
    expect(total).toBeCloseTo(wholeLoss.item(), 6);
    parts.forEach((g, i) => expect(g).toBeCloseTo((whole.logprobs.grad as Tensor).data[i], 6));
  });

  it('rejects a bad option, naming it', () => {
    expect(() => lldsLoss(input(), { likelihoodCoefficient: -1 })).toThrow(/likelihoodCoefficient/);
    expect(() => lldsLoss(input(), { gate: 'turn' as 'action' })).toThrow(/options\.gate/);
    const schema = policyLosses.entry('llds').options!;
    expect(() => parsePartOptions(schema, { lambda: 0.2 }, 'algorithm.lossOptions', 'llds')).toThrow(
      /no option "lambda"/,
    );
  });

  it('is registered as llds', () => {
    expect(policyLosses.get('llds')).toBe(lldsLoss);
  });
});
