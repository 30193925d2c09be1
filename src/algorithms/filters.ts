/**
 * Group filters and length shaping on plain arrays: DAPO dynamic sampling (drop zero-variance
 * groups), NGRPO's all-correct-only variant, truncated-completion masking, a refill loop the trainer
 * can drive, and DAPO's soft overlong punishment.
 *
 * Is: pure functions deciding which groups/samples stay in the loss, with the shared
 * `GroupFilterFn` signature for the registered ones.
 * Is not: a sampler — `refillKeptGroups` calls back into a generator the trainer passes in.
 */
import { type Part, definePart } from './registry.js';
import { z } from 'zod';
import {
  type RewardValues,
  resolveGroups,
  segmentStats,
  toRewardArray,
  zeroStdThreshold,
} from './advantages-groups.js';

/** What every group filter receives. */
export interface GroupFilterInput {
  /** [N] scalar rewards (or accuracies), groups contiguous; null/NaN = unscored (ignored in the statistics). */
  rewards: RewardValues;
  /** Group sizes (ragged allowed) or one shared size. */
  groupSizes: number | readonly number[];
  /** [N] true/1 when the completion hit the max-length limit without finishing. */
  truncated?: ArrayLike<boolean | number>;
}

/** Tunables of the registered filters. */
export interface GroupFilterOptions {
  /** drop-all-correct: a reward ≥ this counts as correct (default 1). */
  correctThreshold?: number;
}

/** Which groups and samples stay in the loss. */
export interface GroupFilterResult {
  /** [groups] 1 = group kept. */
  keepGroups: Uint8Array;
  /** [N] 1 = sample kept (its group kept and the sample itself not masked). */
  keepSamples: Uint8Array;
}

/** The one signature of every registered group filter. */
export type GroupFilterFn = (input: GroupFilterInput, options?: GroupFilterOptions) => GroupFilterResult;

/** A group filter's file exports its function with this entry (`algorithm.groupFilter`). */
export const defineGroupFilter = (entry: Omit<Part<GroupFilterFn>, 'kind'>): Part<GroupFilterFn> =>
  definePart('group filter', entry);

function groupKeepToSamples(groupOf: Int32Array, keepGroups: Uint8Array): Uint8Array {
  return Uint8Array.from(groupOf, (g) => keepGroups[g]);
}

/**
 * DAPO dynamic sampling: drop every group whose scored rewards all agree (std = 0: all wrong or all
 * right), because it contributes zero advantage. Yu et al. 2025, DAPO (arXiv 2503.14476).
 */
export function dropZeroVarianceGroups(input: GroupFilterInput): GroupFilterResult {
  const rewards = toRewardArray(input.rewards);
  const layout = resolveGroups(rewards.length, input.groupSizes);
  const stats = segmentStats(rewards, layout.groupOf, layout.groupCount, 'population');
  const keepGroups = Uint8Array.from(stats.std, (s, g) => (stats.count[g] >= 2 && s >= zeroStdThreshold ? 1 : 0));
  return { keepGroups, keepSamples: groupKeepToSamples(layout.groupOf, keepGroups) };
}

/** `algorithm.groupFilter: dynamic-sampling`: the entry `grpo list` prints and configs name. */
export const dropZeroVarianceGroupsPart = defineGroupFilter({
  name: 'dynamic-sampling',
  fn: dropZeroVarianceGroups,
  description: 'drop groups whose rewards all agree (refill with refillKeptGroups)',
  citation: 'DAPO dynamic sampling, arXiv 2503.14476',
  options: z.object({}).strict(),
});

/**
 * NGRPO dynamic-sampling strategy `all_correct`: drop only groups whose scored rewards are all ≥
 * `correctThreshold` (default 1); all-wrong groups stay, since NGRPO's virtual sample gives them a
 * signal. NGRPO: Negative-enhanced Group Relative Policy Optimization (catalog #238).
 */
export function dropAllCorrectGroups(input: GroupFilterInput, options: GroupFilterOptions = {}): GroupFilterResult {
  const rewards = toRewardArray(input.rewards);
  const layout = resolveGroups(rewards.length, input.groupSizes);
  const threshold = options.correctThreshold ?? 1;
  const keepGroups = new Uint8Array(layout.groupCount);
  for (let g = 0; g < layout.groupCount; g++) {
    let allCorrect = true;
    let scored = 0;
    for (let i = layout.starts[g]; i < layout.starts[g] + layout.sizes[g]; i++) {
      if (Number.isNaN(rewards[i])) continue;
      scored++;
      if (rewards[i] < threshold) allCorrect = false;
    }
    keepGroups[g] = scored > 0 && !allCorrect ? 1 : 0;
  }
  return { keepGroups, keepSamples: groupKeepToSamples(layout.groupOf, keepGroups) };
}

/** `algorithm.groupFilter: drop-all-correct`: the entry `grpo list` prints and configs name. */
export const dropAllCorrectGroupsPart = defineGroupFilter({
  name: 'drop-all-correct',
  fn: dropAllCorrectGroups,
  description: 'drop only all-correct groups (all-wrong ones stay for NGRPO)',
  citation: 'NGRPO (#238) filter_groups.strategy=all_correct',
  options: z.object({ correctThreshold: z.number() }).partial().strict(),
});

/**
 * Overlong filtering: completions truncated at the max length leave the loss entirely (keepSamples
 * = 0); groups are kept. TRL `mask_truncated_completions`; DAPO (arXiv 2503.14476).
 */
export function maskTruncatedCompletions(input: GroupFilterInput): GroupFilterResult {
  const layout = resolveGroups(input.rewards.length, input.groupSizes);
  const truncated = input.truncated;
  if (truncated === undefined) throw new Error('The mask-truncated filter needs input.truncated ([N] booleans).');
  if (truncated.length !== input.rewards.length)
    throw new RangeError(`input.truncated has ${truncated.length} entries but rewards has ${input.rewards.length}.`);
  const keepSamples = Uint8Array.from({ length: truncated.length }, (_, i) => (truncated[i] ? 0 : 1));
  return { keepGroups: new Uint8Array(layout.groupCount).fill(1), keepSamples };
}

/** `algorithm.groupFilter: mask-truncated`: the entry `grpo list` prints and configs name. */
export const maskTruncatedCompletionsPart = defineGroupFilter({
  name: 'mask-truncated',
  fn: maskTruncatedCompletions,
  description: 'completions cut at max length leave the loss',
  citation: 'TRL mask_truncated_completions; DAPO overlong filtering',
  options: z.object({}).strict(),
});

/** Runs several filters and keeps what all of them keep. */
export function intersectFilters(results: readonly GroupFilterResult[]): GroupFilterResult {
  if (results.length === 0) throw new Error('intersectFilters needs at least one filter result.');
  const keepGroups = results[0].keepGroups.map((_, g) => (results.every((r) => r.keepGroups[g]) ? 1 : 0));
  const keepSamples = results[0].keepSamples.map((_, i) => (results.every((r) => r.keepSamples[i]) ? 1 : 0));
  return { keepGroups, keepSamples };
}

/** One generated batch as seen by the refill loop. */
export interface GeneratedBatch<Batch> {
  batch: Batch;
  filterInput: GroupFilterInput;
}

/** What the refill loop collected: the kept group indices of each generated batch. */
export interface RefillResult<Batch> {
  kept: { batch: Batch; groupIndices: number[] }[];
  keptGroupCount: number;
  generatedBatches: number;
  /** True when `targetGroups` was reached before `maxBatches`. */
  complete: boolean;
}

/**
 * DAPO refill loop: generate batches until `targetGroups` groups survive `filter` or `maxBatches`
 * batches were generated (verl `max_num_gen_batches`); surplus groups of the last batch are cut.
 */
export async function refillKeptGroups<Batch>(
  generate: (round: number) => Promise<GeneratedBatch<Batch>> | GeneratedBatch<Batch>,
  filter: GroupFilterFn,
  targetGroups: number,
  maxBatches: number,
): Promise<RefillResult<Batch>> {
  if (!(Number.isInteger(targetGroups) && targetGroups > 0))
    throw new RangeError(`targetGroups must be a positive integer, got ${targetGroups}.`);
  if (!(Number.isInteger(maxBatches) && maxBatches > 0))
    throw new RangeError(`maxBatches must be a positive integer, got ${maxBatches}.`);
  const kept: { batch: Batch; groupIndices: number[] }[] = [];
  let keptGroupCount = 0;
  let round = 0;
  while (keptGroupCount < targetGroups && round < maxBatches) {
    const generated = await generate(round++);
    const { keepGroups } = filter(generated.filterInput);
    const groupIndices: number[] = [];
    keepGroups.forEach((keep, g) => {
      if (keep && keptGroupCount + groupIndices.length < targetGroups) groupIndices.push(g);
    });
    if (groupIndices.length > 0) kept.push({ batch: generated.batch, groupIndices });
    keptGroupCount += groupIndices.length;
  }
  return { kept, keptGroupCount, generatedBatches: round, complete: keptGroupCount >= targetGroups };
}

/** Length limits of DAPO's soft overlong punishment. */
export interface OverlongOptions {
  /** L_max: the hard completion-length limit in tokens (DAPO 20480). */
  maxLength: number;
  /** L_cache: the soft band before L_max where the penalty ramps from 0 to −1 (DAPO 4096). */
  cacheLength: number;
}

/**
 * DAPO soft overlong punishment, added to the task reward: 0 if |y| ≤ L_max − L_cache, then
 * ((L_max − L_cache) − |y|)/L_cache up to L_max, −1 beyond. DAPO Eq. 13; TRL `get_soft_overlong_punishment`.
 */
export function softOverlongPunishment(lengths: ArrayLike<number>, options: OverlongOptions): Float32Array {
  const { maxLength, cacheLength } = options;
  if (!(cacheLength > 0 && cacheLength <= maxLength))
    throw new RangeError(`cacheLength must be in (0, maxLength], got ${cacheLength} with maxLength ${maxLength}.`);
  const softStart = maxLength - cacheLength;
  return Float32Array.from({ length: lengths.length }, (_, i) => {
    const length = lengths[i];
    if (!(length >= 0)) throw new RangeError(`lengths[${i}] is ${length}; a completion length must be ≥ 0.`);
    if (length <= softStart) return 0;
    if (length <= maxLength) return (softStart - length) / cacheLength;
    return -1;
  });
}
