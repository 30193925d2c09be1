/**
 * A named registry of plain functions that share one signature, with a description and a citation
 * per entry, so `grpo list` can print every algorithmic part and configs can name them.
 *
 * Is: a map from name to function plus metadata, with loud errors (a taken name claimed by a
 * different function, an unknown name listing the known ones).
 * Is not: a plugin loader — nothing registers itself through a side-effect import; the modules of
 * this folder register their built-ins explicitly in index.ts.
 */

/** Metadata printed by `grpo list` next to each registered name. */
export interface RegistryEntryInfo {
  /** One line: what the function computes and its exact choices. */
  description: string;
  /** Paper or reference implementation the formula comes from. */
  citation: string;
}

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
      entries.set(name, { name, fn, description: info.description, citation: info.citation });
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
