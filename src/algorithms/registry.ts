/**
 * A named registry of plain functions that share one signature, with a description and a citation
 * per entry, so `grpo list` can print every algorithmic part and configs can name them.
 *
 * Is: a map from name to function plus metadata, with loud errors (a taken name claimed by a
 * different function, an unknown name listing the known ones).
 * Is not: a plugin loader — nothing registers itself through a side-effect import; the modules of
 * this folder register their built-ins explicitly in index.ts.
 */
import type { ZodType } from 'zod';

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
 *   reference answer, computed by the trainer with the policy (IGPO).
 */
export type AlgorithmNeed =
  | 'strata'
  | 'clusters'
  | 'baselines'
  | 'wholeGroups'
  | 'groupTokenWeights'
  | 'serialRollout'
  | 'stateKeys'
  | 'informationGains';

/** One registered function with its name and metadata. */
export interface RegistryEntry<Fn> extends RegistryEntryInfo {
  name: string;
  fn: Fn;
}

/** A registry of functions of one kind (advantage estimator, policy loss, ...). */
export interface Registry<Fn> {
  /** The kind of function held, used in error messages ("advantage estimator"). */
  readonly kind: string;
  /** Adds `fn` under `name`; re-registering the same function is a no-op, a different one throws. */
  register(name: string, fn: Fn, info: RegistryEntryInfo): void;
  /** Returns the function registered under `name` or throws an error listing the known names. */
  get(name: string): Fn;
  /** True when `name` is registered. */
  has(name: string): boolean;
  /** Every entry, in registration order. */
  list(): RegistryEntry<Fn>[];
  /** The registered names, in registration order. */
  names(): string[];
}

/** Thrown by `Registry.get` for an unknown name; carries the names that would have worked. */
export class UnknownRegistryNameError extends Error {
  constructor(
    readonly kind: string,
    readonly requestedName: string,
    readonly availableNames: string[],
  ) {
    super(`Unknown ${kind} "${requestedName}". Known ${kind}s: ${availableNames.join(', ') || '(none)'}.`);
    this.name = 'UnknownRegistryNameError';
  }
}

/** Creates an empty registry for functions of one kind. */
export function createRegistry<Fn>(kind: string): Registry<Fn> {
  const entries = new Map<string, RegistryEntry<Fn>>();
  return {
    kind,
    register(name, fn, info) {
      if (!/^[a-z0-9][a-z0-9-]*$/.test(name)) {
        throw new Error(`${kind} name "${name}" must be kebab-case (lower-case letters, digits, dashes).`);
      }
      const existing = entries.get(name);
      if (existing !== undefined) {
        if (existing.fn === fn) return;
        throw new Error(`${kind} "${name}" is already registered to a different function.`);
      }
      entries.set(name, { name, fn, ...info });
    },
    get(name) {
      const entry = entries.get(name);
      if (entry === undefined) throw new UnknownRegistryNameError(kind, name, [...entries.keys()]);
      return entry.fn;
    },
    has: (name) => entries.has(name),
    list: () => [...entries.values()],
    names: () => [...entries.keys()],
  };
}
