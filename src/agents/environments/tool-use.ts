/**
 * The built-in tool-use environment: an episode whose world is a fixed list of tools (a calculator,
 * an interpreter, a search index), the same for every row, or chosen per row.
 *
 * Is: the smallest `EnvironmentFactory` — tools and, optionally, a reward over the finished episode
 * and its row. Is not: a grader of the final answer by itself; pair it with a reward over the
 * completion (e.g. `math-answer`), which sees the last assistant turn, or pass `reward`.
 */
import type { Environment, EnvironmentFactory, Episode, Tool } from '../types.js';

/** Options of {@link toolUseEnvironment}. */
export interface ToolUseEnvironmentOptions {
  /** The tools every episode gets, or a function choosing them from the row. */
  tools: readonly Tool[] | ((row: Readonly<Record<string, unknown>>) => readonly Tool[]);
  /** The episode's reward from its row (the reward named 'environment'); omitted = none. */
  reward?: (episode: Episode, row: Readonly<Record<string, unknown>>) => number | null;
}

/**
 * An environment factory that hands each episode the given tools.
 * @example agent environment: toolUseEnvironment({ tools: [calculatorTool()] })
 */
export function toolUseEnvironment({ tools, reward }: ToolUseEnvironmentOptions): EnvironmentFactory {
  if (Array.isArray(tools)) {
    const names = (tools as readonly Tool[]).map((tool) => tool.name);
    const repeated = names.find((name, index) => names.indexOf(name) !== index);
    if (repeated !== undefined) throw new Error(`toolUseEnvironment: two tools are named "${repeated}".`);
  }
  return (row) => {
    const environment: Environment = {
      tools: typeof tools === 'function' ? tools(row) : (tools as readonly Tool[]),
    };
    if (reward !== undefined) environment.reward = (episode) => reward(episode, row);
    return environment;
  };
}
