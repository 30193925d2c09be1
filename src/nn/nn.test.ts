/**
 * AdamW against torch.optim.AdamW (fixture from scripts/reference/adamw.py), schedules by hand,
 * gradient clipping, and the seeded RNG's determinism and state round trip.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parameter, tensor } from '../tensor/index.js';
import { AdamW, clipGradNorm, learningRateAt, Random } from './index.js';
import { testFixture } from '../../test/helpers/fixtures.js';

const reference = JSON.parse(readFileSync(testFixture('adamw.json'), 'utf8'));

describe('AdamW', () => {
  it('matches torch.optim.AdamW step for step (decay on one group, none on the other)', () => {
    const p = parameter(reference.initial.p);
    const q = parameter(reference.initial.q);
    const optimizer = new AdamW(
      [
        { name: 'p', tensor: p, decay: true },
        { name: 'q', tensor: q, decay: false },
      ],
      {
        learningRate: reference.lr,
        beta1: reference.beta1,
        beta2: reference.beta2,
        epsilon: reference.eps,
        weightDecay: reference.weightDecay,
      },
    );
    reference.grads.forEach(([gp, gq]: number[][], step: number) => {
      p.grad = tensor(gp);
      q.grad = tensor(gq);
      optimizer.step();
      // float32 arithmetic in a different order than torch's kernels: agree to ~1e-6 relative.
      reference.steps[step].p.forEach((value: number, i: number) => expect(p.data[i]).toBeCloseTo(value, 6));
      reference.steps[step].q.forEach((value: number, i: number) => expect(q.data[i]).toBeCloseTo(value, 6));
    });
  });

  it('state round-trips so a resumed optimiser continues identically', () => {
    const make = () => {
      const w = parameter([1, 2, 3]);
      return { w, optimizer: new AdamW([{ name: 'w', tensor: w, decay: true }], { learningRate: 0.1 }) };
    };
    const a = make();
    const b = make();
    for (const run of [a, b]) {
      run.w.grad = tensor([0.3, -0.1, 0.2]);
      run.optimizer.step();
    }
    const restored = make();
    restored.w.data.set(b.w.data);
    restored.optimizer.setState(b.optimizer.getState());
    for (const run of [a, restored]) {
      run.w.grad = tensor([-0.5, 0.4, 0.1]);
      run.optimizer.step();
    }
    expect(Array.from(restored.w.data)).toEqual(Array.from(a.w.data));
  });

  it('rejects duplicate names and mismatched saved state', () => {
    const w = parameter([1]);
    expect(
      () =>
        new AdamW(
          [
            { name: 'w', tensor: w, decay: true },
            { name: 'w', tensor: w, decay: true },
          ],
          { learningRate: 1 },
        ),
    ).toThrow(/appears twice/);
    const optimizer = new AdamW([{ name: 'w', tensor: w, decay: true }], { learningRate: 1 });
    expect(() => optimizer.setState({ step: 1, moments: {} })).toThrow(/no saved moments for parameter "w"/);
  });
});

describe('learning-rate schedules', () => {
  it('warms up linearly then holds, decays linearly, or follows a cosine', () => {
    expect(
      [0, 1, 2, 3, 9].map((s) => learningRateAt({ kind: 'constant', learningRate: 1, warmupSteps: 4 }, s)),
    ).toEqual([0.25, 0.5, 0.75, 1, 1]);
    expect([0, 5, 10].map((s) => learningRateAt({ kind: 'linear', learningRate: 2, totalSteps: 10 }, s))).toEqual([
      2, 1, 0,
    ]);
    const cosine = (s: number) =>
      learningRateAt({ kind: 'cosine', learningRate: 1, totalSteps: 12, warmupSteps: 2, minRatio: 0.1 }, s);
    expect(cosine(2)).toBeCloseTo(1, 12);
    expect(cosine(7)).toBeCloseTo(0.55, 12); // halfway: min + (peak − min)/2
    expect(cosine(12)).toBeCloseTo(0.1, 12);
  });
  it('explains a decaying schedule without totalSteps', () => {
    expect(() => learningRateAt({ kind: 'cosine', learningRate: 1 }, 3)).toThrow(/needs totalSteps/);
  });
});

describe('gradient clipping', () => {
  it('scales to the max norm, returns the norm before clipping, leaves small gradients alone', () => {
    const a = parameter([0, 0]);
    const b = parameter([0]);
    a.grad = tensor([3, 0]);
    b.grad = tensor([4]);
    expect(clipGradNorm([a, b], 1)).toBeCloseTo(5, 6);
    expect(Array.from(a.grad.data).map((x) => +x.toFixed(5))).toEqual([0.6, 0]);
    expect(b.grad.data[0]).toBeCloseTo(0.8, 5);
    expect(clipGradNorm([a, b], 10)).toBeCloseTo(1, 5);
    expect(b.grad.data[0]).toBeCloseTo(0.8, 5);
  });
  it('returns a non-finite norm without touching the gradients', () => {
    const a = parameter([0, 0]);
    a.grad = tensor([NaN, 1]);
    expect(clipGradNorm([a], 1)).toBeNaN();
    expect(a.grad.data[1]).toBe(1);
  });
});

describe('Random', () => {
  it('is deterministic per seed, differs across seeds, and restores its state', () => {
    const a = new Random(42);
    const b = new Random(42);
    const c = new Random(43);
    const draw = (r: Random) => Array.from({ length: 5 }, () => r.uniform());
    const first = draw(a);
    expect(draw(b)).toEqual(first);
    expect(draw(c)).not.toEqual(first);
    const state = a.getState();
    const next = [a.normal(), a.normal(), a.normal()];
    a.setState(state);
    expect([a.normal(), a.normal(), a.normal()]).toEqual(next);
  });
  it('has sane moments (uniform mean 0.5, normal mean 0 and variance 1)', () => {
    const r = new Random(1);
    let sum = 0;
    let sumNormal = 0;
    let sumSquares = 0;
    const n = 20000;
    for (let i = 0; i < n; i++) {
      sum += r.uniform();
      const z = r.normal();
      sumNormal += z;
      sumSquares += z * z;
    }
    expect(Math.abs(sum / n - 0.5)).toBeLessThan(0.01);
    expect(Math.abs(sumNormal / n)).toBeLessThan(0.03);
    expect(Math.abs(sumSquares / n - 1)).toBeLessThan(0.04);
  });
});
