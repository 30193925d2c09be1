/**
 * Tests of `grpo serve-rewards`: Python clients written with the standard library (python3, run
 * as a child process) send exactly OpenRLHF's, slime's and verl's requests to a server on
 * 127.0.0.1 and get the rewards `grpo reward` computes for the same rows (the oracle is the CLI
 * path, run here on the same rows, not constants), with rows that share a prompt scored as a group.
 * Not here: malformed bodies, failing rewards, concurrency and the command (reward-server.test.ts),
 * nor the reward functions (src/rewards).
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { NamedReward } from '../rewards/index.js';
import { runRewardCommand } from './reward-command.js';
import { startRewardServer, type RunningRewardServer } from '../serve/reward-server.js';
import { resolveServedRewards } from './serve-rewards-command.js';

const repositoryRoot = new URL('../../', import.meta.url).pathname;
const directory = mkdtempSync(join(tmpdir(), 'grpo-serve-rewards-'));
const servers: RunningRewardServer[] = [];
afterAll(async () => {
  await Promise.all(servers.map((server) => server.close()));
  rmSync(directory, { recursive: true, force: true });
});

async function serve(rewards: NamedReward[]): Promise<string> {
  const server = await startRewardServer({ rewards, host: '127.0.0.1', port: 0 });
  servers.push(server);
  return server.url;
}

/** Runs a python3 script (standard library only) with `input` as JSON on stdin; returns its stdout as JSON. */
function python(script: string, input: unknown): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const child = execFile(
      'python3',
      ['-c', script],
      { cwd: repositoryRoot, timeout: 60_000 },
      (error, stdout, stderr) =>
        error ? reject(new Error(`${error.message}\n${stderr}`)) : resolve(JSON.parse(stdout)),
    );
    child.stdin!.end(JSON.stringify(input));
  });
}

/** Python's json reads NaN; it is written back as the string "NaN" so that JSON.parse can read the result. */
const pythonPrelude = `
import json, math, sys, urllib.request, urllib.error
def clean(value):
    if isinstance(value, float) and math.isnan(value): return "NaN"
    if isinstance(value, list): return [clean(item) for item in value]
    if isinstance(value, dict): return {key: clean(item) for key, item in value.items()}
    return value
args = json.load(sys.stdin)
`;

/** The request OpenRLHF's SingleTurnAgentExecutor._fetch_rewards_via_http sends (aiohttp json=payload). */
const openRlhfClient = `${pythonPrelude}
payload = {"query": args["query"], "prompts": args["prompts"], "labels": args["labels"]}
request = urllib.request.Request(args["url"], data=json.dumps(payload).encode(), headers={"Content-Type": "application/json"})
with urllib.request.urlopen(request, timeout=30) as response:
    print(json.dumps(clean(json.loads(response.read()))))
`;

/** Imports scripts/verl_compute_score.py by path, as verl's get_custom_reward_fn does, and calls it with keywords. */
const verlClient = `${pythonPrelude}
import importlib.util
spec = importlib.util.spec_from_file_location("custom_module", "scripts/verl_compute_score.py")
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
try:
    result = module.compute_score(data_source="openai/gsm8k", solution_str=args["solution"], ground_truth=args["answer"],
                                  extra_info=args.get("extra_info"), url=args["url"], per_reward=args.get("per_reward", False))
    print(json.dumps({"result": clean(result)}))
except RuntimeError as error:
    print(json.dumps({"raised": str(error)}))
`;

// Two prompts, interleaved: rows that share a prompt are one group even when not consecutive.
const promptA = 'What is 9 + 9? ';
const promptB = 'What is 2 + 3? ';
const rows = [
  { prompt: promptA, completion: '<think>add</think> \\boxed{18}', answer: '18' },
  { prompt: promptB, completion: 'it is \\boxed{5}', answer: '5' },
  { prompt: promptA, completion: '<think>nine and nine, carry the one</think> \\boxed{18}', answer: '18' },
  { prompt: promptB, completion: '<think>hmm</think> \\boxed{6}', answer: '5' },
  { prompt: promptA, completion: 'no idea', answer: '18' },
];
// The protocols carry text only, so the group reward counts characters (token ids are not sent).
const rewardEntries = [
  { name: 'math-answer', weight: 1 },
  { name: 'think-format', weight: 0.5 },
  { name: 'length-among-correct', weight: 0.25, options: { unit: 'characters' } },
];

/** Each reward's score per row from `grpo reward NAME`, rows of a prompt grouped as its `group` field says. */
async function cliScores(name: string, options?: object): Promise<(number | null)[]> {
  const ordered = rows.map((row, index) => ({ ...row, index })).sort((a, b) => a.prompt.localeCompare(b.prompt));
  const input = join(directory, `${name}.jsonl`);
  writeFileSync(input, ordered.map(({ index: _, ...row }) => JSON.stringify({ ...row, group: row.prompt })).join('\n'));
  const lines: string[] = [];
  await runRewardCommand(
    { name, input, options: options && JSON.stringify(options) },
    { stdout: (line) => lines.push(line), stderr: () => {} },
  );
  const scores = new Array<number | null>(rows.length);
  lines.forEach((line, position) => {
    const result = JSON.parse(line) as { score?: number | null; error?: string };
    if (result.error !== undefined) throw new Error(`grpo reward ${name}: ${result.error}`);
    scores[ordered[position]!.index] = result.score ?? null;
  });
  return scores;
}

let url: string;
const expected: { perReward: Record<string, (number | null)[]>; combined: number[] } = { perReward: {}, combined: [] };

beforeAll(async () => {
  const recipe = join(directory, 'recipe.json');
  writeFileSync(recipe, JSON.stringify({ rewards: rewardEntries }));
  url = `${await serve(await resolveServedRewards({ recipe }))}/get_reward`;
  for (const { name, options } of rewardEntries) expected.perReward[name] = await cliScores(name, options);
  // The trainer's combination: Σ w·score over the rewards that apply (rewards/combine.ts weightedSum).
  expected.combined = rows.map((_, row) =>
    rewardEntries.reduce((total, { name, weight }) => total + weight * (expected.perReward[name]![row] ?? 0), 0),
  );
  // The rows exercise every case: right and wrong answers, with and without think, a group effect.
  expect(expected.perReward['math-answer']).toEqual([1, 1, 1, 0, 0]);
  expect(new Set(expected.perReward['length-among-correct']!.filter((score) => score !== null)).size).toBeGreaterThan(
    1,
  );
}, 60_000);

describe('OpenRLHF remote reward protocol', () => {
  it('a standard-library Python client gets the rewards grpo reward computes, per-reward scores in extra_logs', async () => {
    const response = (await python(openRlhfClient, {
      url,
      query: rows.map((row) => row.prompt + row.completion),
      prompts: rows.map((row) => row.prompt),
      labels: rows.map((row) => row.answer),
    })) as { rewards: number[]; scores: number[]; extra_logs: Record<string, unknown[]>; errors: unknown[] };
    response.rewards.forEach((reward, row) => expect(reward).toBeCloseTo(expected.combined[row]!, 12));
    expect(response.scores).toEqual(response.rewards);
    for (const [name, scores] of Object.entries(expected.perReward))
      expect(response.extra_logs[`reward/${name}`]).toEqual(scores.map((score) => score ?? 'NaN'));
    expect(response.errors).toEqual([]);
  });

  it('also answers at POST /; a JSON-object label supplies the columns', async () => {
    const root = url.replace(/get_reward$/, '');
    const response = (await python(openRlhfClient, {
      url: root,
      query: [promptA + rows[0]!.completion],
      prompts: [promptA],
      labels: [JSON.stringify({ answer: '18' })],
    })) as { rewards: number[] };
    // Alone in its request, the row is its own group, as `grpo reward` scores a row without a group.
    expect(response.rewards[0]).toBeCloseTo(await cliScoresAlone(0), 12);
  });
});

describe('slime remote reward protocol', () => {
  it('{prompt, response, label} gets the combined reward as a bare JSON number', async () => {
    for (const row of [0, 1, 3]) {
      const response = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ prompt: rows[row]!.prompt, response: rows[row]!.completion, label: rows[row]!.answer }),
      });
      expect(response.status).toBe(200);
      const body = (await response.json()) as number;
      expect(typeof body).toBe('number');
      // A lone sample is a group of one, as slime sends it: the group reward is computed for that group.
      const alone = await cliScoresAlone(row);
      expect(body).toBeCloseTo(alone, 12);
    }
  });
});

/** The combined reward `grpo reward` gives one row scored on its own (a group of one). */
async function cliScoresAlone(row: number): Promise<number> {
  let total = 0;
  for (const { name, weight, options } of rewardEntries) {
    const input = join(directory, `alone-${name}-${row}.jsonl`);
    writeFileSync(input, JSON.stringify(rows[row]));
    const lines: string[] = [];
    await runRewardCommand(
      { name, input, options: options && JSON.stringify(options) },
      { stdout: (line) => lines.push(line), stderr: () => {} },
    );
    total += weight * ((JSON.parse(lines[0]!) as { score: number | null }).score ?? 0);
  }
  return total;
}

describe('verl compute_score (scripts/verl_compute_score.py)', () => {
  it("returns the combined reward as a float, or verl's dict form with per_reward", async () => {
    const plain = (await python(verlClient, { url, solution: rows[2]!.completion, answer: '18' })) as {
      result: number;
    };
    expect(plain.result).toBeCloseTo(await cliScoresAlone(2), 12);
    const detailed = (await python(verlClient, {
      url,
      solution: rows[1]!.completion,
      answer: '5',
      extra_info: { index: 7, split: 'train' },
      per_reward: true,
    })) as { result: Record<string, number | string> };
    expect(detailed.result.score).toBeCloseTo(await cliScoresAlone(1), 12);
    expect(detailed.result['reward/math-answer']).toBe(1);
    expect(detailed.result['reward/think-format']).toBe(0); // no <think> block
  });
});

describe('serve-rewards with a recipe over a dataset task', () => {
  it("serves the recipe's own rewards, with no built-in reward named for the data", async () => {
    const data = join(directory, 'rows.jsonl');
    writeFileSync(data, `${JSON.stringify({ prompt: 'Say hi', answer: 'hi' })}\n`.repeat(4));
    const recipe = join(directory, 'dataset-recipe.mjs');
    writeFileSync(
      recipe,
      `export default {
  config: { task: 'dataset', taskOptions: { trainFile: ${JSON.stringify(data)} } },
  rewards: [{ name: 'says-hi', weight: 1, reward: ({ completion }) => (completion.includes('hi') ? 1 : 0) }],
};\n`,
    );
    const rewards = await resolveServedRewards({ recipe });
    expect(rewards.map((reward) => reward.name)).toEqual(['says-hi']);
  });
});
