/**
 * The reward-factory registry's machinery: the factory type, the registry (kebab-case names, a loud
 * error for a taken name, unknown names listed) and `define`, which wraps a zod options schema.
 *
 * Is not: the built-in entries (`factories.ts` registers them).
 */
import type { z } from 'zod';
import type { Reward } from './types.js';

/** One named reward factory. */
export interface RewardFactory {
  name: string;
  /** One line: what it scores and its range. */
  description: string;
  /** Paper or reference implementation. */
  citation: string;
  /** Builds the reward from JSON options (validated; unknown keys rejected). */
  create(options?: unknown): Reward;
}

/** Thrown for an unknown reward name; lists the known ones. */
export class UnknownRewardError extends Error {
  constructor(
    readonly requestedName: string,
    readonly availableNames: string[],
  ) {
    super(`Unknown reward "${requestedName}". Known rewards: ${availableNames.join(', ')}.`);
    this.name = 'UnknownRewardError';
  }
}

/** A registry of reward factories. */
export interface RewardFactoryRegistry {
  register(factory: RewardFactory): void;
  get(name: string): RewardFactory;
  has(name: string): boolean;
  list(): RewardFactory[];
  names(): string[];
}

/** Creates an empty reward-factory registry. */
export function createRewardFactoryRegistry(): RewardFactoryRegistry {
  const entries = new Map<string, RewardFactory>();
  return {
    register(factory) {
      if (!/^[a-z0-9][a-z0-9-]*$/.test(factory.name))
        throw new Error(`reward name "${factory.name}" must be kebab-case`);
      const existing = entries.get(factory.name);
      if (existing && existing !== factory)
        throw new Error(`reward "${factory.name}" is already registered to a different factory`);
      entries.set(factory.name, factory);
    },
    get(name) {
      const factory = entries.get(name);
      if (!factory) throw new UnknownRewardError(name, [...entries.keys()]);
      return factory;
    },
    has: (name) => entries.has(name),
    list: () => [...entries.values()],
    names: () => [...entries.keys()],
  };
}

/** Builds a factory whose options are checked by `schema`, with errors naming the reward and field. */
export function define<Schema extends z.ZodType>(
  name: string,
  description: string,
  citation: string,
  schema: Schema,
  build: (options: z.infer<Schema>) => Reward,
): RewardFactory {
  return {
    name,
    description,
    citation,
    create(options = {}) {
      const parsed = schema.safeParse(options);
      if (!parsed.success) {
        const problems = parsed.error.issues.map(
          (issue) => `${issue.path.map(String).join('.') || '(options)'}: ${issue.message}`,
        );
        throw new Error(`reward "${name}": bad options: ${problems.join('; ')}`);
      }
      return build(parsed.data);
    },
  };
}
