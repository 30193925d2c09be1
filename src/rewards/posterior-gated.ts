/**
 * `outcome-gated-process`: Posterior-GRPO's reward (Fan, Zhang, Chen & Liu 2025, arXiv 2508.05170,
 * papers.tsv 234; renamed ReCode / CG-GRPO in its latest version), Eq. (1) of its §2.2:
 * R = R_fmt + R_out + 𝟙[R_out = 1]·R_proc. The process (reasoning-quality) reward counts only for a
 * completion whose outcome is a success, so the policy cannot raise its reward by reasoning that reads
 * well but ends wrong, and a group that is all correct still differs by its reasoning quality.
 *
 * Is not: the paper's reasoning reward model (a 7B model trained on optimized/degraded reasoning
 * pairs, not available here); `process` is any per-completion reward by name, e.g. `llm-judge`
 * over an endpoint serving such a model. The authors' code (github.com/ZJU-CTAG/ReCode) was not
 * readable here; the formula is the paper's Eq. (1) as two readings of the paper quote it
 * (docs/algorithms.md).
 */
import { z } from 'zod';
import { outcomeGatedProcessReward } from './combine.js';
import { define, type RewardFactory } from './factory-registry.js';
import type { RewardFn } from './types.js';
import {
  namedReward,
  perCompletionColumns,
  perCompletionReward,
  type ColumnsOfReward,
  type CreateReward,
} from './named-reward.js';

/** Options of {@link outcomeGatedProcess}. */
export interface OutcomeGatedProcessOptions {
  /** R_out: the outcome check; the gate opens where it scores exactly 1 (null counts as 0). */
  outcome: RewardFn;
  /** R_proc: the reasoning-quality score, in [0, 1] in the paper; asked only where R_out = 1. */
  process: RewardFn;
  /** R_fmt: the format check (the paper's `<think>…</think><answer>…</answer>`); absent = 0. */
  format?: RewardFn;
  /** Weight of R_proc (default 1, as Eq. (1)); ALGORITHMS.md §5.7 writes it λ. */
  processWeight?: number;
}

/**
 * R = R_fmt + R_out + w·𝟙[R_out = 1]·R_proc for one completion; the process reward is not called
 * where the outcome fails (its score could not count, and a reward model call costs).
 * @example outcomeGatedProcess({ outcome: mathAnswer(), process: llmJudge({ rubric: 'Is the reasoning sound?' }) })
 */
export function outcomeGatedProcess({
  outcome,
  process,
  format,
  processWeight = 1,
}: OutcomeGatedProcessOptions): RewardFn {
  if (!(processWeight >= 0 && Number.isFinite(processWeight)))
    throw new Error(`outcome-gated-process: processWeight must be a finite number ≥ 0, got ${processWeight}`);
  return async (input) => {
    const outcomeScore = (await outcome(input)) ?? 0;
    const formatScore = format ? ((await format(input)) ?? 0) : 0;
    const processScore = outcomeScore === 1 ? ((await process(input)) ?? 0) : 0;
    return formatScore + outcomeGatedProcessReward([outcomeScore], [processScore], processWeight)[0]!;
  };
}

/** The registry entry; the three parts by name are built with `createReward`, their columns are `columnsOfReward`'s. */
export function outcomeGatedProcessFactory(
  createReward: CreateReward,
  columnsOfReward: ColumnsOfReward,
): RewardFactory {
  const name = 'outcome-gated-process';
  return define(
    name,
    "R_fmt + R_out + w·𝟙[R_out = 1]·R_proc: a process reward by name (e.g. llm-judge) counts only where the outcome check (default the run's task check) scores 1",
    'Posterior-GRPO / ReCode (Fan et al. 2025, arXiv 2508.05170) Eq. (1); ALGORITHMS.md §5.7',
    z
      .object({
        process: namedReward,
        outcome: namedReward.optional(),
        format: namedReward.optional(),
        processWeight: z.number().min(0).finite().optional(),
      })
      .strict(),
    (options, context) =>
      outcomeGatedProcess({
        outcome: perCompletionReward(createReward, name, 'outcome', options.outcome, context),
        process: perCompletionReward(createReward, name, 'process', options.process, {}),
        format: options.format && perCompletionReward(createReward, name, 'format', options.format, {}),
        processWeight: options.processWeight,
      }),
    (options, context) => [
      ...perCompletionColumns(columnsOfReward, 'outcome', options.outcome, context),
      ...perCompletionColumns(columnsOfReward, 'process', options.process, {}),
      ...(options.format ? perCompletionColumns(columnsOfReward, 'format', options.format, {}) : []),
    ],
  );
}
