/**
 * SmartSearch's process rewards (#164; Wen, Dong, Dou 2026, arXiv 2601.04888, §4.2 "Dual-Level
 * Credit Assessment", Eq. 8–11): every search call of an episode is scored S_t = 1 when its query is
 * both novel and useful, else 0. Novelty is the paper's rule: O_t, the number of documents the call
 * retrieved that have the same content as a document retrieved by an earlier call, must not exceed
 * the threshold K. Usefulness is the paper's model-based check (an LLM given the question, the golden
 * answer and the search process so far), passed in as a function.
 *
 * Is: an environment factory (the search tool plus `scoreToolCalls`); the `smartsearch` reward turns
 * the scores into the paper's composite reward. Is not: the usefulness model (a recipe supplies
 * one: the paper's prompt over an endpoint, or a rule), the textual explanations T_t, nor the
 * query-refinement rollout that rewrites a query scored 0 and regenerates the rest of the episode.
 */
import type { Environment, EnvironmentFactory, Tool, ToolCallRecord } from '../types.js';

/** What the usefulness check sees for the t-th search call (H_t: this call and the ones before it). */
export interface QueryUsefulnessInput {
  row: Readonly<Record<string, unknown>>;
  /** The call being scored. */
  call: ToolCallRecord;
  /** The episode's search calls up to and including this one, in order. */
  history: readonly ToolCallRecord[];
}

/** Options of {@link smartSearchEnvironment}. */
export interface SmartSearchEnvironmentOptions {
  /** The search tool (e.g. `searchTool`); only calls to it are scored, others get null. */
  search: Tool;
  /** K: a call is redundant when more than K of its documents were retrieved before (the paper gives no value). */
  overlapThreshold: number;
  /** S_useful ∈ {0, 1}: whether the query's intent is necessary and its results answer it. */
  usefulness: (input: QueryUsefulnessInput) => number | boolean | Promise<number | boolean>;
  /** The documents of one result, compared by content; default: the blocks `searchTool` writes ("[n] title\ntext"). */
  documentsOf?: (result: string) => string[];
}

/** Splits a `searchTool` observation into its documents without the rank prefix, so equal content compares equal. */
export function searchResultDocuments(result: string): string[] {
  if (!/^\[\d+\] /.test(result)) return [];
  return result.split(/\n\n(?=\[\d+\] )/).map((block) => block.replace(/^\[\d+\] /, ''));
}

/**
 * Eq. 8–9: O_t = Σ_i 1[D_i^t ∈ ∪_{s<t} ∪_j D_j^s], and the call is novel when O_t ≤ K.
 * @example queryNovelty(['a', 'b'], new Set(['b']), 0) // false: one document seen before, K = 0
 */
export function queryNovelty(
  documents: readonly string[],
  seen: ReadonlySet<string>,
  overlapThreshold: number,
): boolean {
  const overlap = documents.filter((document) => seen.has(document)).length;
  return overlap <= overlapThreshold;
}

/**
 * Scores the episode's calls in order (Eq. 11): S_t = 1 when novel and useful, else 0. A failed
 * search call (malformed, bad arguments, timeout) retrieved nothing and scores 0; calls to other
 * tools are not scored (null). The usefulness check is not asked about a redundant call.
 */
async function scoreCalls(
  calls: readonly ToolCallRecord[],
  row: Readonly<Record<string, unknown>>,
  options: SmartSearchEnvironmentOptions,
): Promise<(number | null)[]> {
  const documentsOf = options.documentsOf ?? searchResultDocuments;
  const seen = new Set<string>();
  const history: ToolCallRecord[] = [];
  const scores: (number | null)[] = [];
  for (const call of calls) {
    if (call.name !== options.search.name) {
      scores.push(null);
      continue;
    }
    history.push(call);
    if (call.error !== undefined) {
      scores.push(0);
      continue;
    }
    const documents = documentsOf(call.result);
    const novel = queryNovelty(documents, seen, options.overlapThreshold);
    for (const document of documents) seen.add(document);
    const useful = novel ? Number(await options.usefulness({ row, call, history: [...history] })) : 0;
    if (useful !== 0 && useful !== 1)
      throw new Error(`smartSearchEnvironment: usefulness must be 0 or 1, got ${useful}.`);
    scores.push(novel && useful === 1 ? 1 : 0);
  }
  return scores;
}

/**
 * An environment with the search tool whose calls are scored by SmartSearch's Dual-Level Credit
 * Assessment; pair it with the `smartsearch` reward (and a correctness check on the final answer).
 * @example environment: smartSearchEnvironment({ search: searchTool({ documents }), overlapThreshold: 0, usefulness: ({ call, row }) => call.result.includes(String(row.support)) })
 */
export function smartSearchEnvironment(options: SmartSearchEnvironmentOptions): EnvironmentFactory {
  if (!Number.isInteger(options.overlapThreshold) || options.overlapThreshold < 0)
    throw new RangeError(
      `smartSearchEnvironment: overlapThreshold (K) must be a whole number ≥ 0, got ${options.overlapThreshold}.`,
    );
  return (row) => {
    const environment: Environment = {
      tools: [options.search],
      scoreToolCalls: (calls) => scoreCalls(calls, row, options),
    };
    return environment;
  };
}
