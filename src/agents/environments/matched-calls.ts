/**
 * MatchTIR's per-call rewards (Qu et al. 2026, "MatchTIR: Fine-Grained Supervision for Tool-Integrated
 * Reasoning via Bipartite Matching"): every tool call of an episode is matched against the row's
 * reference calls and rewarded by its similarity to the one it is matched with, so a turn with right
 * calls is credited even when the final answer is wrong.
 *
 * Is: an environment factory (tools as `toolUseEnvironment`, plus `scoreToolCalls`), the similarity
 * and the assignment of the authors' `compute_process_KM` (quchangle1/MatchTIR,
 * Code/verl/utils/reward_score/tool.py: `tool_similarity`, `match_score`, `hungarian_assignment`).
 * Is not: the answer's reward (the run's rewards grade the final answer, e.g. `char-f1`) or the
 * advantage (`algorithm.turnCredit: matchtir`); the soft optimal-transport variant is not offered.
 */
import type { Environment, EnvironmentFactory, Episode, Tool, ToolCallRecord } from '../types.js';

/** One reference call of a row: `{ "name": …, "parameters": { … } }`. */
export interface ReferenceCall {
  name: string;
  parameters?: Record<string, unknown>;
}

/** Options of {@link matchedCallsEnvironment}. */
export interface MatchedCallsOptions {
  /** The tools every episode gets, or a function choosing them from the row. */
  tools: readonly Tool[] | ((row: Readonly<Record<string, unknown>>) => readonly Tool[]);
  /** The row's column holding the reference calls: an array of {@link ReferenceCall}, or its JSON text (default 'toolCalls'). */
  referenceColumn?: string;
  /** The episode's reward from its row (the reward named 'environment'); omitted = none. */
  reward?: (episode: Episode, row: Readonly<Record<string, unknown>>) => number | null;
}

/** |A ∩ B| / (|A| + |B| − |A ∩ B|) over multisets; equal lists → 1, one empty → 0 (the authors' `match_score`). */
function listOverlap(first: readonly string[], second: readonly string[]): number {
  if (first.length === second.length && first.every((item, index) => item === second[index])) return 1;
  if (first.length === 0 || second.length === 0) return 0;
  const counts = new Map<string, number>();
  for (const item of first) counts.set(item, (counts.get(item) ?? 0) + 1);
  let common = 0;
  for (const item of second) {
    const left = counts.get(item) ?? 0;
    if (left > 0) {
      common++;
      counts.set(item, left - 1);
    }
  }
  return common / (first.length + second.length - common);
}

/** Deep equality of JSON values (Python's `==` on parsed JSON). */
function sameValue(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const keysA = Object.keys(a);
  const keysB = Object.keys(b);
  if (keysA.length !== keysB.length) return false;
  return keysA.every((key) => key in b && sameValue((a as never)[key], (b as never)[key]));
}

/**
 * A call's similarity to a reference call, in [0, 1]: 0 when the names differ (case-insensitive);
 * else (1 + overlap of the parameter names + the number of reference parameters given with an equal
 * value) / (2 + the number of reference parameters).
 */
export function callSimilarity(
  call: { name: string; arguments: Record<string, unknown> },
  reference: ReferenceCall,
): number {
  if (call.name.toLowerCase() !== reference.name.toLowerCase()) return 0;
  const expected = reference.parameters ?? {};
  const names = Object.keys(expected);
  const equalValues = names.filter((name) => name in call.arguments && sameValue(call.arguments[name], expected[name]));
  return (1 + listOverlap(names, Object.keys(call.arguments)) + equalValues.length) / (2 + names.length);
}

/**
 * One reward per call: its similarity to the reference call it is assigned, 0 when unassigned. The
 * assignment is the authors' (named Hungarian, greedy in their code): every (call, reference) pair by
 * falling similarity, ties in call-then-reference order, taken when both are free and the similarity > 0.
 */
export function matchCallRewards(
  calls: readonly { name: string; arguments: Record<string, unknown> }[],
  references: readonly ReferenceCall[],
): number[] {
  const pairs = calls.flatMap((call, i) =>
    references.map((reference, j) => ({ score: callSimilarity(call, reference), i, j })),
  );
  pairs.sort((a, b) => b.score - a.score); // stable: equal scores keep (i, j) order, as Python's sort
  const rewards = calls.map(() => 0);
  const callTaken = calls.map(() => false);
  const referenceTaken = references.map(() => false);
  for (const { score, i, j } of pairs) {
    if (callTaken[i] || referenceTaken[j] || score <= 0) continue;
    callTaken[i] = true;
    referenceTaken[j] = true;
    rewards[i] = score;
  }
  return rewards;
}

/** The row's reference calls, checked; errors name the column. */
function referenceCalls(row: Readonly<Record<string, unknown>>, column: string): ReferenceCall[] {
  let value = row[column];
  if (typeof value === 'string') {
    try {
      value = JSON.parse(value);
    } catch {
      throw new Error(`matchedCallsEnvironment: column "${column}" is not valid JSON`);
    }
  }
  const valid = (call: unknown): call is ReferenceCall =>
    typeof call === 'object' &&
    call !== null &&
    typeof (call as ReferenceCall).name === 'string' &&
    ((call as ReferenceCall).parameters === undefined || typeof (call as ReferenceCall).parameters === 'object');
  if (!Array.isArray(value) || !value.every(valid))
    throw new Error(
      `matchedCallsEnvironment: column "${column}" must hold an array of { "name": string, "parameters": object } reference calls`,
    );
  return value;
}

/**
 * Tool-use episodes whose calls are rewarded by MatchTIR's matching against the row's reference calls.
 * @example environment: matchedCallsEnvironment({ tools: [weatherTool], referenceColumn: 'toolCalls' })
 */
export function matchedCallsEnvironment({
  tools,
  referenceColumn = 'toolCalls',
  reward,
}: MatchedCallsOptions): EnvironmentFactory {
  return (row) => {
    const references = referenceCalls(row, referenceColumn);
    const environment: Environment = {
      tools: typeof tools === 'function' ? tools(row) : (tools as readonly Tool[]),
      scoreToolCalls: (calls: readonly ToolCallRecord[]) => matchCallRewards(calls, references),
    };
    if (reward !== undefined) environment.reward = (episode) => reward(episode, row);
    return environment;
  };
}
