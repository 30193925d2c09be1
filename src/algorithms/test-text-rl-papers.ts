/**
 * Test helpers of the text-RL paper losses (DisCO, DRPO, NFT; issue 31): the float64 torch fixture
 * written by scripts/reference/text_rl_papers.py, its batch as a loss input, and the comparison.
 * Is: shared by policy-losses-{disco,drpo,nft}.test.ts. Is not: shipped (tests only).
 */
import { readFileSync } from 'node:fs';
import { expect } from 'vitest';
import { type Tensor, tensor } from '../tensor/index.js';
import type { PolicyLossInput } from './policy-losses-common.js';

/** One reference case: the loss, its options, value and gradient with respect to logπ. */
export interface PaperLossCase {
  name: string;
  loss: string;
  options: Record<string, unknown>;
  value: number;
  gradient: number[];
  metrics: Record<string, number>;
}
interface PaperBatch {
  oldLogprobs: number[][];
  logRatio: number[][];
  mask: number[][];
  rewards: number[];
  groupSizes: number[];
}
export const paperFixture = JSON.parse(
  readFileSync(new URL('../../test/fixtures/text-rl-papers.json', import.meta.url), 'utf8'),
) as { batch: PaperBatch; losses: PaperLossCase[] };

/** The fixture's batch [12, 6] in three groups of four; advantages r − mean_g r (their signs are the labels). */
export function paperInput(): PolicyLossInput {
  const { oldLogprobs, logRatio, mask, rewards, groupSizes } = paperFixture.batch;
  const old = oldLogprobs.flat();
  const mean = (g: number) => rewards.slice(4 * g, 4 * g + 4).reduce((a, b) => a + b, 0) / 4;
  return {
    logprobs: tensor(
      logRatio.flat().map((r, i) => old[i] + r),
      [12, 6],
      { requiresGrad: true },
    ),
    oldLogprobs: old,
    advantages: rewards.map((r, i) => r - mean(Math.floor(i / 4))),
    mask: mask.flat(),
    groupSizes,
  };
}

/**
 * The loss (times `scale`) and the gradient of `logprobs` match a reference case, to `tolerance`
 * relative (the value against max(1, |v|), each gradient entry against 0.1 + |g|).
 */
export function expectReference(
  loss: Tensor,
  logprobs: Tensor,
  referenceCase: PaperLossCase,
  scale = 1,
  tolerance = 1e-5,
): void {
  expect(Math.abs(loss.item() * scale - referenceCase.value)).toBeLessThanOrEqual(
    tolerance * Math.max(1, Math.abs(referenceCase.value)),
  );
  const gradient = (logprobs.grad as Tensor).data;
  referenceCase.gradient.forEach((g, i) =>
    expect(Math.abs(gradient[i] * scale - g), `token ${i}: ${gradient[i] * scale} vs ${g}`).toBeLessThanOrEqual(
      tolerance * (0.1 + Math.abs(g)),
    ),
  );
}
