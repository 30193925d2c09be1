/**
 * Named registries: the one implementation behind every "configs name it, `grpo list` prints it"
 * collection — the algorithm parts (algorithms/), the reward factories (rewards/) and the tasks
 * (data/). A registry maps a kebab-case name to an entry, refuses a taken name claimed by a
 * different entry, and fails on an unknown name with an error that lists the known ones.
 *
 * Is: the map, its checks and its errors. Each layer wraps it in the typed facade its callers use
 * (`advantageEstimators.get(name)` returns the function, `rewardFactories.get(name)` the factory).
 * Is not: a plugin loader — nothing registers itself through a side-effect import; each layer's
 * index lists its built-ins, and a recipe lists its own.
 * Also keeps every registry's map in `everyRegistry`, so the test setup can put back what a test
 * file added (checkpointRegistries) when test files share one process.
 */

/** Thrown for an unknown name; carries the names that would have worked. */
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

/** The entry maps of every registry this process created, for checkpointRegistries. */
const everyRegistry = new Set<Map<string, unknown>>();

/**
 * Records every registry's entries now and returns a function that puts them back: entries added
 * since are removed, removed ones return. Registries created after the checkpoint are left alone.
 * Exists for the test setup (test/helpers/per-file-state.ts): test files that share a process must
 * not see parts another file registered (a recipe's loss would join `policyLosses.names()`).
 */
export function checkpointRegistries(): () => void {
  const saved = [...everyRegistry].map((entries) => ({ entries, copy: new Map(entries) }));
  return () => {
    for (const { entries, copy } of saved) {
      entries.clear();
      for (const [name, entry] of copy) entries.set(name, entry);
    }
  };
}

/** Entries of one kind by name, in registration order. */
export interface NamedRegistry<Entry extends { name: string }> {
  /** What the entries are, for messages ("advantage estimator", "reward", "task"). */
  readonly kind: string;
  /** Adds an entry; the same entry again is a no-op, a different one under a taken name throws. */
  add(entry: Entry): void;
  /** The entry named `name`, or an `UnknownRegistryNameError` listing the known names. */
  entry(name: string): Entry;
  has(name: string): boolean;
  list(): Entry[];
  names(): string[];
}

/**
 * An empty registry of `kind`. `sameEntry` decides when re-adding under a taken name is the same
 * registration (default: the same object); `what` names what differs in the error ("function").
 */
export function createNamedRegistry<Entry extends { name: string }>(
  kind: string,
  options: { sameEntry?: (existing: Entry, added: Entry) => boolean; what?: string } = {},
): NamedRegistry<Entry> {
  const entries = new Map<string, Entry>();
  everyRegistry.add(entries);
  const sameEntry = options.sameEntry ?? ((existing, added) => existing === added);
  const entryOf = (name: string): Entry => {
    const entry = entries.get(name);
    if (entry === undefined) throw new UnknownRegistryNameError(kind, name, [...entries.keys()]);
    return entry;
  };
  return {
    kind,
    add(entry) {
      const { name } = entry;
      if (typeof name !== 'string' || !/^[a-z0-9][a-z0-9-]*$/.test(name)) {
        throw new Error(`${kind} name "${name}" must be kebab-case (lower-case letters, digits, dashes).`);
      }
      const existing = entries.get(name);
      if (existing !== undefined) {
        if (sameEntry(existing, entry)) return;
        throw new Error(`${kind} "${name}" is already registered to a different ${options.what ?? 'entry'}.`);
      }
      entries.set(name, entry);
    },
    entry: entryOf,
    has: (name) => entries.has(name),
    list: () => [...entries.values()],
    names: () => [...entries.keys()],
  };
}
