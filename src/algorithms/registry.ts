/**
 * A named registry of plain functions that share one signature, with a description and a citation
 * per entry, so `grpo list` can print every algorithmic part and configs can name them.
 *
 * Is: a map from name to function plus metadata, with loud errors (a taken name claimed by a
 * different function, an unknown name listing the known ones), and `Part`: the function together
 * with its entry, which each part's own file exports (verl's `@register_adv_est` sits on the
 * function in the same way) — name, description, citation, options schema, needs, and the run
 * settings it refuses — so the trainer branches on what a part declares, never on its name.
 * Is not: a plugin loader — nothing registers itself through a side-effect import; index.ts lists
 * the built-in parts explicitly, and a recipe lists its own (`Recipe.parts`).
 */
import type { ZodType } from 'zod';
import { createNamedRegistry } from '../registry/registry.js';

export { UnknownRegistryNameError } from '../registry/registry.js';

/** Metadata printed by `grpo list` next to each registered name. */
export interface RegistryEntryInfo {
  /** One line: what the function computes and its exact choices. */
  description: string;
  /** Paper or reference implementation the formula comes from. */
  citation: string;
  /** The options a config may give this part (a strict zod object); absent = none. */
  options?: ZodType;
  /** What the part needs from the data, the rollout or the trainer beyond the common inputs. */
  needs?: readonly AlgorithmNeed[];
  /**
   * The run settings this part cannot work with, one problem line each (`field: why`), given its
   * parsed options; checked with every other part's before any model is loaded. Absent = none.
   */
  refuses?: (options: Record<string, unknown>, settings: RunSettings) => string[];
  /**
   * An advantage estimator with the need `temperatureLogprobs`: the temperature at which the trainer
   * computes π_old's log-probs of the batch's completions, given its parsed options and the previous
   * update's entropy estimate (NaN before the first update).
   */
  logprobTemperature?: (options: Record<string, unknown>, previousEntropy: number) => number;
}

/**
 * The settings of a run that a part's `refuses` may check, read once from the config: the step's
 * sizes, the KL and correction settings, and the other chosen parts by name and needs.
 */
export interface RunSettings {
  groupSize: number;
  promptsPerStep: number;
  microBatchSize: number;
  klCoefficient: number;
  klPlacement: 'loss' | 'reward';
  /** True when algorithm.mismatchCorrection is set. */
  mismatchCorrection: boolean;
  advantage: { name: string; needs: readonly AlgorithmNeed[] };
  loss: { name: string; needs: readonly AlgorithmNeed[] };
  groupFilter: string | null;
  promptSelector: string | null;
  /** The run's reward names, in order (a part that reads a reward's column by name checks it here). */
  rewardNames: readonly string[];
}

/** The registries a part can join, by the kind its file declares. */
export type PartKind =
  | 'advantage estimator'
  | 'policy loss'
  | 'loss aggregation'
  | 'KL estimator'
  | 'group filter'
  | 'prompt selector'
  | 'turn-credit estimator';

/** A part as its file exports it: the function with its registry entry and the kind of registry it joins. */
export interface Part<Fn> extends RegistryEntryInfo {
  kind: PartKind;
  name: string;
  fn: Fn;
}

/** Types a part's entry (`definePart('policy loss', { name, fn, … })`); validation happens on registration. */
export function definePart<Fn, Extra extends object = object>(
  kind: PartKind,
  entry: Omit<Part<Fn>, 'kind'> & Extra,
): Part<Fn> & Extra {
  return { kind, ...entry };
}

/**
 * What a part can need besides rewards, logprobs and masks. The trainer supplies each one (or
 * refuses the config before any compute, naming the part and what is missing):
 * - `strata`: a stratum key per sample (a dataset column or a rollout statistic, `strataFrom`);
 * - `clusters`: a semantic cluster id per sample (equivalent final answers);
 * - `baselines`: a persistent per-prompt value, kept in trainer state and checkpoints;
 * - `wholeGroups`: every micro-batch holds whole groups, with their sizes;
 * - `groupTokenWeights`: per-token weights computed from the whole group before micro-batching;
 * - `serialRollout`: a group's samples are serial early exits of one chain of thought (the rollout
 *   must say it provides `serialExits`);
 * - `stateKeys`: a turn-credit estimator needs the anchor-state key before every model turn (an
 *   environment with `stateKey()`; GiGPO's step groups);
 * - `informationGains`: a turn-credit estimator needs each turn's information gain about the
 *   reference answer, computed by the trainer with the policy (IGPO);
 * - `entropyWithGradient`: a policy loss needs the policy's per-token entropy as a tensor with
 *   gradient (`input.entropyTensor`), for a loss term on the entropy itself;
 * - `completionIds`: an advantage estimator needs each sample's sampled token ids (tree advantages);
 * - `rewardComponents`: an advantage estimator needs each reward function's scores before weighting
 *   (GDPO). Every text rollout supplies these two; a flow (image) run supplies no need at all, so its
 *   `flow.rl.advantageEstimator` takes only estimators that need nothing;
 * - `trackedQuantiles`: an advantage estimator reads quantiles tracked across steps (RiskPO), kept in
 *   trainer state and checkpoints and moved after each step by the samples it returns;
 * - `temperatureLogprobs`: an advantage estimator needs π_old's log-probs of every completion token
 *   at the temperature its entry's `logprobTemperature` names, and the rollout's (DCPO);
 * - `previousEntropy`: an advantage estimator needs the previous update's −mean logπ over its loss
 *   tokens, kept in trainer state and checkpoints (DCPO);
 * - `referenceLogprobs`: a loss needs the reference model's log-probs of every completion token
 *   (`input.refLogprobs`) without a KL term in the loss (TRPA's preference log-ratios);
 * - `referenceTokenLogprobs`: an advantage estimator needs the reference model's log-prob of every
 *   completion token before advantages (`input.referenceLogprobs`; GRPO-CARE's answer likelihood);
 *   the run then keeps a reference model at β = 0 too;
 * - `tokenTexts`: an advantage estimator needs each completion token's decoded text (`input.tokenTexts`),
 *   to find a span of the completion by its text (GRPO-CARE's `<answer>`).
 */
export type AlgorithmNeed =
  | 'strata'
  | 'clusters'
  | 'baselines'
  | 'wholeGroups'
  | 'groupTokenWeights'
  | 'serialRollout'
  | 'stateKeys'
  | 'informationGains'
  | 'entropyWithGradient'
  | 'completionIds'
  | 'rewardComponents'
  | 'trackedQuantiles'
  | 'temperatureLogprobs'
  | 'previousEntropy'
  | 'referenceLogprobs'
  | 'referenceTokenLogprobs'
  | 'tokenTexts';

/** One registered function with its name and metadata. */
export interface RegistryEntry<Fn> extends RegistryEntryInfo {
  name: string;
  fn: Fn;
}

/** A registry of functions of one kind (advantage estimator, policy loss, ...), with their entries. */
export interface Registry<Fn, Entry extends RegistryEntry<Fn> = RegistryEntry<Fn>> {
  /** The kind of function held, used in error messages ("advantage estimator"). */
  readonly kind: string;
  /** Adds `fn` under `name`; re-registering the same function is a no-op, a different one throws. */
  register(name: string, fn: Fn, info: Omit<Entry, 'name' | 'fn'>): void;
  /** Adds a part's whole entry (as `register` does with its name and function). */
  add(entry: Entry): void;
  /** The whole entry registered under `name`, or an error listing the known names. */
  entry(name: string): Entry;
  /** Returns the function registered under `name` or throws an error listing the known names. */
  get(name: string): Fn;
  /** True when `name` is registered. */
  has(name: string): boolean;
  /** Every entry, in registration order. */
  list(): Entry[];
  /** The registered names, in registration order. */
  names(): string[];
}

/** Creates an empty registry for functions of one kind (the shared `createNamedRegistry`, keyed on the function). */
export function createRegistry<Fn, Entry extends RegistryEntry<Fn> = RegistryEntry<Fn>>(
  kind: string,
): Registry<Fn, Entry> {
  const named = createNamedRegistry<Entry>(kind, { sameEntry: (a, b) => a.fn === b.fn, what: 'function' });
  const add = (entry: Entry): void => {
    if (typeof entry.fn !== 'function')
      throw new Error(`${kind} "${entry.name}": fn must be a function, got ${typeof entry.fn}.`);
    // `needs` is always a list once registered, so callers never test for its absence.
    named.add({ ...entry, needs: entry.needs ?? [] });
  };
  return {
    ...named,
    register: (name, fn, info) => add({ ...info, name, fn } as Entry),
    add,
    get: (name) => named.entry(name).fn,
  };
}
