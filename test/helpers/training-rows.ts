/**
 * A training batch's rows one at a time, for tests that compare the step with a composition by
 * hand: each row's tokens with its slice of every per-token column (views, cut at the row's
 * completion length) and its advantage and group.
 *
 * Is not: anything the trainer uses (it reads the columns and row ranges, trainer/optimize.ts).
 */
import type { TrainingBatch } from '../../src/trainer/optimize.js';

export function rowsOf(batch: TrainingBatch) {
  const { Tc } = batch;
  return batch.rows.map((row, r) => {
    const slice = (column?: Float32Array) => column?.subarray(r * Tc, r * Tc + row.completionIds.length);
    return {
      ...row,
      oldLogprobs: slice(batch.oldLogprobs)!,
      tokenAdvantages: slice(batch.tokenAdvantages),
      rolloutLogprobs: slice(batch.rolloutLogprobs),
      refLogprobs: slice(batch.refLogprobs),
      tokenWeights: slice(batch.tokenWeights),
      advantage: batch.advantage[r],
      group: batch.group[r],
    };
  });
}
