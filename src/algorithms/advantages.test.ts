/**
 * Tests of the group advantage estimators: every ALGORITHMS.md §1 test vector as written, a
 * loop-based reference against the flat-pass implementation on random ragged batches, and
 * degenerate inputs. Is not: a test of the structured estimators (advantages-structured.test.ts).
 */
import { describe, expect, it } from 'vitest';
import {
  batchStdAdvantage,
  drGrpoAdvantage,
  grpoAdvantage,
  mcGrpoAdvantage,
  ngrpoAdvantage,
  rlooAdvantage,
} from './advantages.js';
import { expandAdvantagesToTokens, padTokenAdvantages } from './advantages-groups.js';
import { expectCloseWithin } from '../../test/helpers/numeric.js';

/** The spec prints 4 decimals: half a unit in the last place, plus float32 rounding of the result. */
const expectClose = expectCloseWithin(5.1e-5);

describe('ALGORITHMS.md §1 test vectors', () => {
  it('§1.1 GRPO r=[1,0,1,0]: sample std (ε=1e-6, verl) and population std', () => {
    expectClose(grpoAdvantage({ rewards: [1, 0, 1, 0], groupSizes: 4 }).advantages, [0.866, -0.866, 0.866, -0.866]);
    expectClose(
      grpoAdvantage({ rewards: [1, 0, 1, 0], groupSizes: 4 }, { std: 'population' }).advantages,
      [1, -1, 1, -1],
    );
  });
  it('§1.1 GRPO r=[0.2,0.9,0.5,0.4] reproduces the vector with TRL ε=1e-4', () => {
    // The spec's 4-dp values (−1.0187, 1.3583, −0.3396) are those of ε=1e-4; ε=1e-6 gives −1.0190.
    expectClose(
      grpoAdvantage({ rewards: [0.2, 0.9, 0.5, 0.4], groupSizes: 4 }, { epsilon: 1e-4 }).advantages,
      [-1.0187, 1.3583, 0, -0.3396],
    );
  });
  it('§1.1 GRPO all-equal rewards give zeros, no NaN, stdIsZero set', () => {
    const result = grpoAdvantage({ rewards: [1, 1, 1, 1], groupSizes: 4 });
    expect([...result.advantages]).toEqual([0, 0, 0, 0]);
    expect([...result.stdIsZero]).toEqual([1]);
  });
  it('§1.2 Dr. GRPO', () => {
    expectClose(drGrpoAdvantage({ rewards: [1, 0, 1, 0], groupSizes: 4 }).advantages, [0.5, -0.5, 0.5, -0.5]);
  });
  it('§1.3 RLOO', () => {
    expectClose(rlooAdvantage({ rewards: [1, 0, 1, 0], groupSizes: 4 }).advantages, [0.6667, -0.6667, 0.6667, -0.6667]);
  });
  it('§1.4 batch std keeps the group mean and divides by the batch std', () => {
    // Batch [1,0 | 1,1]: group means 0.5 and 1; batch sample std = 0.5.
    expectClose(batchStdAdvantage({ rewards: [1, 0, 1, 1], groupSizes: 2 }).advantages, [1, -1, 0, 0], 1e-5);
  });
  it('§1.5 MC-GRPO median/MAD with the pivot dropped', () => {
    const result = mcGrpoAdvantage({ rewards: [0.2, 0.9, 0.5, 0.4, 1.0], groupSizes: 5 });
    expectClose(result.advantages, [-0.9967, 1.3289, 0, -0.3322, 1.6611]);
    expect([...result.keep]).toEqual([1, 1, 0, 1, 1]);
    // The mean baseline flips the sign of r = 0.5's rollout relative to the median one.
    expectClose(
      drGrpoAdvantage({ rewards: [0.2, 0.9, 0.5, 0.4, 1.0], groupSizes: 5 }).advantages,
      [-0.4, 0.3, -0.1, -0.2, 0.4],
    );
  });
  it('§1.5 MC-GRPO binary rewards: MAD 0 gives |A| = 1000 unless madFloor is set', () => {
    const rewards = [1, 0, 0, 0, 0];
    expectClose(mcGrpoAdvantage({ rewards, groupSizes: 5 }).advantages, [1000, 0, 0, 0, 0], 1e-2);
    expectClose(mcGrpoAdvantage({ rewards, groupSizes: 5 }, { madFloor: 0.5 }).advantages, [1 / 0.501, 0, 0, 0, 0]);
  });
  it("§1.5 MC-GRPO MAD 0 with a non-zero deviation: −0.2/1e-3 = −200, as the authors' code divides", () => {
    // lotusroot-kim/MC-GRPO grpo_trainer_{math,gsm}.py: mad_rewards + 1e-3, no zero-spread case.
    const result = mcGrpoAdvantage({ rewards: [1, 1, 0.8], groupSizes: 3 });
    expectClose(result.advantages, [0, 0, -200], 1e-6);
    expect(Array.from(result.keep)).toEqual([0, 1, 1]); // the first 1 is the pivot
    // A group with no spread at all is exactly 0 (r − m = 0), not ε noise.
    expect(Array.from(mcGrpoAdvantage({ rewards: [0.8, 0.8, 0.8], groupSizes: 3 }).advantages)).toEqual([0, 0, 0]);
    expectClose(mcGrpoAdvantage({ rewards: [1, 1, 0.8], groupSizes: 3 }, { madFloor: 0.2 }).advantages, [
      0,
      0,
      -0.2 / 0.201,
    ]);
  });
  it('§1.5 MC-GRPO GSM variant rescales non-zero advantages by (G+1)/#non-zero', () => {
    const plain = mcGrpoAdvantage({ rewards: [0.2, 0.9, 0.5, 0.4, 1.0], groupSizes: 5 });
    const scaled = mcGrpoAdvantage({ rewards: [0.2, 0.9, 0.5, 0.4, 1.0], groupSizes: 5 }, { rescaleNonzero: true });
    expectClose(
      scaled.advantages,
      [...plain.advantages].map((a) => (a * 5) / 4),
      1e-4,
    );
  });
  it('§1.6 NGRPO virtual max-reward sample', () => {
    expectClose(
      ngrpoAdvantage({ rewards: [0, 0, 0, 0], groupSizes: 4 }).advantages,
      [-0.4472, -0.4472, -0.4472, -0.4472],
    );
    expectClose(
      ngrpoAdvantage({ rewards: [1, 0, 0, 0], groupSizes: 4 }).advantages,
      [1.0954, -0.7303, -0.7303, -0.7303],
    );
    expectClose(
      ngrpoAdvantage({ rewards: [1, 1, 0, 0], groupSizes: 4 }).advantages,
      [0.7303, 0.7303, -1.0954, -1.0954],
    );
  });
});

/** Loop-based reference: slice each group, filter scored rewards, compute with plain arrays. */
function referenceGroupAdvantages(
  rewards: (number | null)[],
  sizes: number[],
  kind: 'grpo' | 'dr' | 'rloo',
  std: 'sample' | 'population',
  epsilon: number,
): number[] {
  const out: number[] = [];
  let offset = 0;
  for (const size of sizes) {
    const group = rewards.slice(offset, offset + size);
    offset += size;
    const scored = group.filter((r): r is number => r !== null && !Number.isNaN(r));
    const n = scored.length;
    const mean = scored.reduce((a, b) => a + b, 0) / n;
    const variance = scored.reduce((a, r) => a + (r - mean) ** 2, 0) / (std === 'sample' ? n - 1 : n);
    for (const r of group) {
      if (r === null || Number.isNaN(r)) out.push(0);
      else if (n === 1) out.push(r);
      else if (scored.every((s) => s === scored[0])) out.push(0);
      else if (kind === 'grpo') out.push((r - mean) / (Math.sqrt(variance) + epsilon));
      else if (kind === 'dr') out.push(r - mean);
      else out.push(r - (scored.reduce((a, b) => a + b, 0) - r) / (n - 1));
    }
  }
  return out;
}

function seededRandom(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state * 1664525 + 1013904223) >>> 0;
    return state / 4294967296;
  };
}

describe('loop reference vs flat-pass implementation', () => {
  it('agrees on random ragged batches with null/NaN rewards and groups of one', () => {
    const random = seededRandom(7);
    for (let trial = 0; trial < 200; trial++) {
      const sizes = Array.from({ length: 1 + Math.floor(random() * 6) }, () => 1 + Math.floor(random() * 7));
      const rewards = sizes.flatMap((size) =>
        Array.from({ length: size }, () => {
          const u = random();
          if (u < 0.1) return null;
          if (u < 0.15) return NaN;
          return u < 0.5 ? Math.round(random()) : random() * 4 - 2;
        }),
      );
      for (const std of ['sample', 'population'] as const) {
        const input = { rewards, groupSizes: sizes };
        expectClose(
          grpoAdvantage(input, { std }).advantages,
          referenceGroupAdvantages(rewards, sizes, 'grpo', std, 1e-6),
          2e-5,
        );
        expectClose(
          drGrpoAdvantage(input, { std }).advantages,
          referenceGroupAdvantages(rewards, sizes, 'dr', std, 0),
          2e-5,
        );
        expectClose(
          rlooAdvantage(input, { std }).advantages,
          referenceGroupAdvantages(rewards, sizes, 'rloo', std, 0),
          2e-5,
        );
      }
      const keep = grpoAdvantage({ rewards, groupSizes: sizes }).keep;
      expect([...keep]).toEqual(rewards.map((r) => (r === null || Number.isNaN(r) ? 0 : 1)));
    }
  });
});

describe('degenerate input', () => {
  const estimators = {
    grpo: grpoAdvantage,
    dr: drGrpoAdvantage,
    rloo: rlooAdvantage,
    batch: batchStdAdvantage,
    mc: mcGrpoAdvantage,
    ngrpo: ngrpoAdvantage,
  };
  it('all-equal rewards give zero advantages and no NaN for every group estimator but NGRPO', () => {
    for (const [name, estimator] of Object.entries(estimators)) {
      if (name === 'ngrpo') continue; // NGRPO deliberately gives all-equal groups a non-zero advantage.
      const result = estimator({ rewards: [0.3, 0.3, 0.3, 0.3, 0.3], groupSizes: 5 });
      expect([...result.advantages], name).toEqual([0, 0, 0, 0, 0]);
    }
  });
  it('groups of one: verl convention A = r, or 0 with singletonGroup zero', () => {
    expect([...grpoAdvantage({ rewards: [0.7, 0.2], groupSizes: 1 }).advantages]).toEqual([
      Math.fround(0.7),
      Math.fround(0.2),
    ]);
    expect([...grpoAdvantage({ rewards: [0.7, 0.2], groupSizes: 1 }, { singletonGroup: 'zero' }).advantages]).toEqual([
      0, 0,
    ]);
    expect([...rlooAdvantage({ rewards: [0.7], groupSizes: [1] }).advantages]).toEqual([Math.fround(0.7)]);
  });
  it('every estimator returns finite numbers on a batch of unscored rewards', () => {
    for (const [name, estimator] of Object.entries(estimators)) {
      const result = estimator({ rewards: [null, null, NaN], groupSizes: [2, 1] });
      expect(result.advantages.every(Number.isFinite), name).toBe(true);
      expect([...result.keep], name).toEqual([0, 0, 0]);
    }
  });
  it('empty batch gives empty results', () => {
    expect(grpoAdvantage({ rewards: [], groupSizes: [] }).advantages.length).toBe(0);
  });
  it('mismatched rewards and group sizes are clear errors', () => {
    expect(() => grpoAdvantage({ rewards: [1, 0, 1], groupSizes: [2, 2] })).toThrow(
      /rewards has 3 entries but groupSizes sum to 4/,
    );
    expect(() => grpoAdvantage({ rewards: [1, 0, 1], groupSizes: 2 })).toThrow(/not a multiple of groupSizes=2/);
    expect(() => grpoAdvantage({ rewards: [1, 0], groupSizes: [0, 2] })).toThrow(
      /groupSizes\[0\] must be a positive integer/,
    );
    expect(() => grpoAdvantage({ rewards: [1, Infinity], groupSizes: 2 })).toThrow(/rewards\[1\] is Infinity/);
  });
});

describe('per-token layout helpers', () => {
  it('broadcasts per-sequence advantages and pads ragged token advantages to [B, T]', () => {
    expect([...expandAdvantagesToTokens([1, -2], 3)]).toEqual([1, 1, 1, -2, -2, -2]);
    expect([...padTokenAdvantages([[1, 2], [3]], 3)]).toEqual([1, 2, 0, 3, 0, 0]);
    expect(() => padTokenAdvantages([[1, 2, 3, 4]], 3)).toThrow(/tokenAdvantages\[0\] has 4 tokens/);
  });
});
