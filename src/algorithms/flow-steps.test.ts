/**
 * The flow sampler steps against the float64 PyTorch reference (scripts/reference/flow_sde_reference.py
 * → test/fixtures/flow/sde-steps.json): same mean, std, drawn x' and log-probs, to 1e-5; the KL of
 * step means; hand-computed values; gradients of the log-prob in the velocity.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { Random, randomNormal, tensor } from '../tensor/index.js';
import { gradCheck } from '../testing/gradcheck.js';
import { flowSigmas, flowStepKl, flowSteps, flowGrpoSdeStep, eulerOdeStep } from './flow-steps.js';
import { testFixture } from '../../test/helpers/fixtures.js';

interface StepOutput {
  mean: number[];
  std: number;
  next: number[];
  logProb: number[] | null;
}
interface Case {
  kind: string;
  index: number;
  noiseLevel: number;
  x: number[];
  v: number[];
  vReference: number[];
  noise: number[];
  given: number[];
  drawn: StepOutput;
  scored: StepOutput;
  kl: number[] | null;
}
const fixture = JSON.parse(readFileSync(testFixture('flow/sde-steps.json'), 'utf8')) as {
  B: number;
  D: number;
  sigmas: number[];
  cases: Case[];
};
const { B, D, sigmas } = fixture;

/** |actual − expected| ≤ 1e-5·max(1, |expected|): float32 arithmetic against float64. */
function expectClose(actual: ArrayLike<number>, expected: readonly number[], label: string): void {
  expect(actual.length, label).toBe(expected.length);
  for (let i = 0; i < expected.length; i++) {
    const error = Math.abs(actual[i] - expected[i]);
    if (error > 1e-5 * Math.max(1, Math.abs(expected[i])))
      throw new Error(`${label}[${i}]: ${actual[i]} vs reference ${expected[i]}`);
  }
}

describe('flow sampler steps against the PyTorch reference', () => {
  it('uses the schedule the reference used', () => expectClose(flowSigmas(4, 3), sigmas, 'sigmas'));
  for (const c of fixture.cases) {
    it(`${c.kind} step ${c.index}`, () => {
      const step = flowSteps.get(c.kind);
      const common = { sigmas, index: c.index, noiseLevel: c.noiseLevel };
      const velocity = tensor(c.v, [B, D]);
      const sample = tensor(c.x, [B, D]);
      const drawn = step({ ...common, sample, velocity, noise: tensor(c.noise, [B, D]) });
      expectClose(drawn.mean.data, c.drawn.mean, 'mean');
      expectClose([drawn.std], [c.drawn.std], 'std');
      expectClose(drawn.nextSample.data, c.drawn.next, 'drawn next');
      const scored = step({ ...common, sample, velocity, nextSample: tensor(c.given, [B, D]) });
      if (c.scored.logProb === null || c.drawn.logProb === null) {
        expect(drawn.logProb).toBeNull();
        expect(scored.logProb).toBeNull();
        return;
      }
      expectClose(drawn.logProb!.data, c.drawn.logProb, 'log-prob of the drawn step');
      expectClose(scored.logProb!.data, c.scored.logProb, 'log-prob of a given next sample');
      const reference = step({
        ...common,
        sample,
        velocity: tensor(c.vReference, [B, D]),
        noise: tensor(c.noise, [B, D]),
      });
      expectClose(flowStepKl(drawn.mean, reference.mean, drawn.std).data, c.kl!, 'KL of step means');
    });
  }
});

describe('flow sampler steps by hand', () => {
  it('Euler: x + v·dt, no log-prob', () => {
    const result = eulerOdeStep({
      sample: tensor([1, 2]),
      velocity: tensor([4, -2]),
      sigmas: [1, 0.75, 0],
      index: 0,
      noiseLevel: 0,
    });
    expect(result.nextSample.toArray()).toEqual([0, 2.5]); // dt = −0.25
    expect(result.logProb).toBeNull();
  });
  it('sde at σ = 0.5 → 0.25, a = 1: std_t = 1, mean and log-prob as written', () => {
    // dt = −0.25; mean = x·(1 − 0.25) + v·(1 + 0.5)·(−0.25) = 0.75x − 0.375v; std = √0.25 = 0.5.
    const result = flowGrpoSdeStep({
      sample: tensor([2], [1, 1]),
      velocity: tensor([1], [1, 1]),
      sigmas: [1, 0.5, 0.25, 0],
      index: 1,
      noiseLevel: 1,
      noise: tensor([1], [1, 1]),
    });
    expect(result.mean.data[0]).toBeCloseTo(1.125, 6);
    expect(result.std).toBeCloseTo(0.5, 6);
    expect(result.nextSample.data[0]).toBeCloseTo(1.625, 6);
    expect(result.logProb!.data[0]).toBeCloseTo(-0.5 - Math.log(0.5) - 0.5 * Math.log(2 * Math.PI), 5);
  });
  it('refuses a step outside the schedule and a KL without noise', () => {
    const input = { sample: tensor([0]), velocity: tensor([0]), sigmas: [1, 0], noiseLevel: 0.7, noise: tensor([0]) };
    expect(() => flowGrpoSdeStep({ ...input, index: 1 })).toThrow(/outside the schedule/);
    expect(() => flowStepKl(tensor([0], [1, 1]), tensor([0], [1, 1]), 0)).toThrow(/positive std/);
  });
});

describe('log-prob gradients in the velocity', () => {
  const random = new Random(3);
  const x = randomNormal([2, 3], random);
  const given = randomNormal([2, 3], random);
  for (const kind of ['sde', 'cps', 'dance']) {
    it(kind, () => {
      gradCheck(
        (v) =>
          flowSteps.get(kind)({
            sample: x,
            velocity: v,
            sigmas: flowSigmas(4, 3),
            index: 2,
            noiseLevel: 0.7,
            nextSample: given,
          }).logProb!,
        [randomNormal([2, 3], random)],
      );
    });
  }
});
