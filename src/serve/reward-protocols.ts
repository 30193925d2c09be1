/**
 * The two remote-reward wire formats `grpo serve-rewards` answers, as pure functions: a request
 * body → rows to score, and the score matrix → the body each trainer expects.
 *
 * - OpenRLHF (`--reward.remote_url`, older `--remote_rm_url`): `{"query": [...], "prompts": [...],
 *   "labels": [...]}` → `{"rewards": [...], "scores": [...], "extra_logs": {...}}`. `query` is the
 *   decoded prompt + response; the response is what follows the prompt, as OpenRLHF's own
 *   `examples/python/math_reward_func.py` takes it (the whole query when it does not start with it).
 * - slime (`--rm-type remote_rm --rm-url`): `{"prompt", "response", "label"}` → the reward as a bare
 *   JSON number, which slime stores as `sample.reward` (a dict would need `--reward-key`).
 *
 * A label is the row's reference: a string or number becomes the `answer` column; an object (or a
 * string holding a JSON object, since OpenRLHF's labels are strings) supplies the columns itself.
 * Is not: HTTP (reward-server.ts) nor the scoring (rewards/run.ts, rewards/combine.ts).
 */
import type { ChatMessage, RewardInput, RewardMatrix } from '../rewards/index.js';
import { jsonNestingDepth } from './json-body.js';

/** A body that is not one of the two formats, or a field of the wrong type: answered with HTTP 400. */
export class RequestError extends Error {}

/** One row of a request: what a reward sees, before grouping. */
export interface ServedRow {
  prompt: string | ChatMessage[];
  completion: string;
  columns: Record<string, unknown>;
}

export type RewardRequest = { protocol: 'openrlhf' | 'slime'; rows: ServedRow[] };

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const expectedFormats =
  'expected OpenRLHF\'s {"query": [...], "prompts": [...], "labels": [...]} or slime\'s {"prompt": ..., "response": "...", "label": ...}';

/**
 * A label as dataset columns (see the file header). JSON held in a label string is one string to
 * the body's depth check, so its own nesting is measured before it is parsed: past `maxDepth` it
 * would overflow the stack of whatever walks the columns later (grouping, a worker's message).
 */
function labelColumns(label: unknown, field: string, maxDepth: number): Record<string, unknown> {
  if (label === undefined || label === null) return {};
  if (isPlainObject(label)) return label;
  if (typeof label === 'number' || typeof label === 'boolean') return { answer: label };
  if (typeof label !== 'string') throw new RequestError(`${field} must be a string, a number or an object of columns`);
  if (label.trimStart().startsWith('{')) {
    if (jsonNestingDepth(label, maxDepth) > maxDepth)
      throw new RequestError(`${field} holds JSON nested more than ${maxDepth} levels deep`);
    try {
      const parsed: unknown = JSON.parse(label);
      if (isPlainObject(parsed)) return parsed;
    } catch {
      // Not JSON after all (e.g. a LaTeX set "{1, 2}"): it is the answer itself.
    }
  }
  return { answer: label };
}

/** A prompt: text, or chat messages `[{role, content}]` (slime's prompt may be either). */
function checkPrompt(prompt: unknown, field: string): string | ChatMessage[] {
  if (prompt === undefined || prompt === null) return '';
  if (typeof prompt === 'string') return prompt;
  if (
    Array.isArray(prompt) &&
    prompt.every(
      (message) => isPlainObject(message) && typeof message.role === 'string' && typeof message.content === 'string',
    )
  )
    return prompt as ChatMessage[];
  throw new RequestError(`${field} must be a string or a list of {"role", "content"} messages`);
}

/** An optional list beside `query`: absent, or one entry per query. */
function sideList(body: Record<string, unknown>, name: string, length: number): unknown[] {
  const value = body[name];
  if (value === undefined || value === null) return new Array<unknown>(length).fill(undefined);
  if (!Array.isArray(value)) throw new RequestError(`"${name}" must be a list with one entry per query`);
  if (value.length !== length)
    throw new RequestError(`"${name}" has ${value.length} entries but "query" has ${length}; send one per query`);
  return value;
}

function parseOpenRlhf(body: Record<string, unknown>, maxDepth: number): ServedRow[] {
  const queries = body.query;
  if (!Array.isArray(queries)) throw new RequestError(`"query" must be a list of strings (prompt + response)`);
  const prompts = sideList(body, 'prompts', queries.length);
  const labels = sideList(body, 'labels', queries.length);
  return queries.map((query, index) => {
    if (typeof query !== 'string') throw new RequestError(`query[${index}] must be a string, got ${typeof query}`);
    const prompt = checkPrompt(prompts[index], `prompts[${index}]`);
    const completion = typeof prompt === 'string' && query.startsWith(prompt) ? query.slice(prompt.length) : query;
    return { prompt, completion, columns: labelColumns(labels[index], `labels[${index}]`, maxDepth) };
  });
}

function parseSlime(body: Record<string, unknown>, maxDepth: number): ServedRow[] {
  if (typeof body.response !== 'string')
    throw new RequestError(`"response" must be a string, got ${typeof body.response}`);
  return [
    {
      prompt: checkPrompt(body.prompt, '"prompt"'),
      completion: body.response,
      columns: labelColumns(body.label, '"label"', maxDepth),
    },
  ];
}

/**
 * The protocol of a parsed JSON body, told apart by its fields, and its rows; `maxDepth` bounds the
 * nesting of JSON held in label strings, as the server bounds the body's.
 */
export function parseRewardRequest(body: unknown, maxDepth: number): RewardRequest {
  if (!isPlainObject(body)) throw new RequestError(`the body must be a JSON object; ${expectedFormats}`);
  if ('query' in body) return { protocol: 'openrlhf', rows: parseOpenRlhf(body, maxDepth) };
  if ('response' in body) return { protocol: 'slime', rows: parseSlime(body, maxDepth) };
  const fields = Object.keys(body);
  throw new RequestError(
    `${expectedFormats}; got ${fields.length ? `the fields ${fields.map((name) => `"${name}"`).join(', ')}` : 'an empty object'}`,
  );
}

/**
 * Rows that share a prompt (and reference) form one group, so group rewards see their peers; the
 * order inside a group is the request's. Returns the groups and, per sample, its row in the request.
 */
export function groupByPrompt(rows: readonly ServedRow[]): { groups: RewardInput[][]; rowOfSample: number[] } {
  const byKey = new Map<string, number[]>();
  rows.forEach((row, index) => {
    const key = JSON.stringify([row.prompt, row.columns]);
    const members = byKey.get(key);
    if (members) members.push(index);
    else byKey.set(key, [index]);
  });
  const groups: RewardInput[][] = [];
  const rowOfSample: number[] = [];
  for (const members of byKey.values()) {
    const completions = members.map((index) => rows[index]!.completion);
    groups.push(
      members.map((index, indexInGroup) => ({
        prompt: rows[index]!.prompt,
        completion: rows[index]!.completion,
        completionIds: [],
        row: rows[index]!.columns,
        group: completions,
        indexInGroup,
        step: 0,
      })),
    );
    rowOfSample.push(...members);
  }
  return { groups, rowOfSample };
}

/** One failed reward call, by request row. */
export interface ServedFailure {
  row: number;
  reward: string;
  status: 'error' | 'timeout';
  message: string;
}

/** Per request row: the combined reward (null when it failed), each reward's score (NaN = none) and the failures. */
export interface ServedScores {
  rewards: (number | null)[];
  perReward: Record<string, number[]>;
  failures: ServedFailure[];
}

/** The matrix and combined rewards (sample order) back in request-row order. */
export function scoresByRow(
  matrix: RewardMatrix,
  combined: Float64Array,
  rowOfSample: readonly number[],
): ServedScores {
  const count = rowOfSample.length;
  const rewards = new Array<number | null>(count).fill(null);
  const perReward: Record<string, number[]> = {};
  const width = matrix.names.length;
  matrix.names.forEach((name, column) => {
    const values = new Array<number>(count).fill(Number.NaN);
    rowOfSample.forEach((row, sample) => {
      if (matrix.status[sample * width + column] === 'ok') values[row] = matrix.scores[sample * width + column]!;
    });
    perReward[`reward/${name}`] = values;
  });
  rowOfSample.forEach((row, sample) => {
    rewards[row] = Number.isNaN(combined[sample]!) ? null : combined[sample]!;
  });
  const failures = matrix.failures.map((failure) => ({
    row: rowOfSample[failure.sample]!,
    reward: failure.reward,
    status: failure.status,
    message: failure.message,
  }));
  return { rewards, perReward, failures };
}

/** A number list as JSON, with NaN written as Python's json module writes and reads it. */
const numbersWithNaN = (values: readonly number[]): string =>
  `[${values.map((value) => (Number.isNaN(value) ? 'NaN' : JSON.stringify(value))).join(', ')}]`;

/**
 * OpenRLHF's response body. `rewards` and `scores` hold the combined reward, `null` for a row whose
 * reward failed; `extra_logs` holds one numeric list per reward (`reward/<name>`, NaN where the
 * reward gave no score) because OpenRLHF turns each extra_logs value into a tensor; the failure
 * messages go in `errors`, a field OpenRLHF does not read.
 */
export function openRlhfResponseBody(scores: ServedScores): string {
  const rewards = JSON.stringify(scores.rewards);
  const logs = Object.entries(scores.perReward)
    .map(([name, values]) => `${JSON.stringify(name)}: ${numbersWithNaN(values)}`)
    .join(', ');
  return `{"rewards": ${rewards}, "scores": ${rewards}, "extra_logs": {${logs}}, "errors": ${JSON.stringify(scores.failures)}}`;
}
