/**
 * The reward-factory registry: the factory type, the registry (the shared named registry of
 * src/registry/: kebab-case names, a loud error for a taken name, unknown names listed) and
 * `define`, which wraps a zod options schema and the row columns the reward reads.
 *
 * Is not: the built-in entries (`factories.ts` registers them).
 */
import type { z } from 'zod';
import { UnknownRegistryNameError, createNamedRegistry } from '../registry/registry.js';
import type { AnyReward, RewardColumn, RewardFn } from './types.js';

/**
 * What a training run knows beyond a reward's options. `taskCorrectness`: the run's task's own check
 * (`task.isCorrect` as 1/0), for rewards whose correctness defaults to the task's (tool-efficiency).
 */
export interface RewardContext {
  taskCorrectness?: RewardFn;
}

/** One named reward factory. */
export interface RewardFactory {
  name: string;
  /** One line: what it scores and its range. */
  description: string;
  /** Paper or reference implementation. */
  citation: string;
  /** Builds the reward from JSON options (validated; unknown keys rejected) and the run's context. */
  create(options?: unknown, context?: RewardContext): AnyReward;
  /**
   * The row columns the reward built from these options cannot score without (a run checks its
   * first training rows for them before any model loads). Columns it can do without are not listed.
   */
  columns(options?: unknown, context?: RewardContext): RewardColumn[];
  /** True for a reward that scores an agent episode's tool calls (a run refuses it without a multi-turn rollout). */
  needsToolCalls?: boolean;
}

/**
 * What `define` takes for the columns: option name → the column it defaults to (the option's value,
 * when given, is the column read), or a function of the parsed options for columns that depend on them.
 */
export type ColumnDeclaration<Options> =
  Partial<Record<keyof Options & string, string>> | ((options: Options, context: RewardContext) => RewardColumn[]);

/** Thrown for an unknown reward name; lists the known ones (the shared registry's error, kind "reward"). */
export const UnknownRewardError = UnknownRegistryNameError;

/** A registry of reward factories (the shared `createNamedRegistry`; `get` returns the factory). */
export interface RewardFactoryRegistry {
  register(factory: RewardFactory): void;
  get(name: string): RewardFactory;
  has(name: string): boolean;
  list(): RewardFactory[];
  names(): string[];
}

/** Creates an empty reward-factory registry. */
export function createRewardFactoryRegistry(): RewardFactoryRegistry {
  const named = createNamedRegistry<RewardFactory>('reward', { what: 'factory' });
  return { register: named.add, get: named.entry, has: named.has, list: named.list, names: named.names };
}

/**
 * Builds a factory whose options are checked by `schema`, with errors naming the reward and field.
 * `columns`: the row columns the reward needs (none when left out), e.g. `{ answerColumn: 'answer' }`.
 */
export function define<Schema extends z.ZodType>(
  name: string,
  description: string,
  citation: string,
  schema: Schema,
  build: (options: z.infer<Schema>, context: RewardContext) => AnyReward,
  columns: ColumnDeclaration<z.infer<Schema>> = {},
): RewardFactory {
  const parse = (options: unknown): z.infer<Schema> => {
    const parsed = schema.safeParse(options);
    if (parsed.success) return parsed.data;
    const problems = parsed.error.issues.map(
      (issue) => `${issue.path.map(String).join('.') || '(options)'}: ${issue.message}`,
    );
    throw new Error(`reward "${name}": bad options: ${problems.join('; ')}`);
  };
  return {
    name,
    description,
    citation,
    create: (options = {}, context = {}) => build(parse(options), context),
    columns(options = {}, context = {}) {
      const parsed = parse(options);
      if (typeof columns === 'function') return columns(parsed, context);
      return Object.entries(columns).map(([option, column]) => optionColumn(parsed, option, column as string));
    },
  };
}

/** The column an option names: its value when given, else `fallback` (the reward's default). */
export function optionColumn(options: unknown, option: string, fallback: string): RewardColumn {
  const value = (options as Record<string, unknown>)[option];
  return { column: typeof value === 'string' ? value : fallback, option };
}
