/**
 * Tests of the reward server's edges: malformed bodies are a 400 naming the field (a body nested too
 * deep before it is parsed), a reward that
 * throws is reported as failed in each protocol (never 0), two slow requests overlap, and the
 * `grpo serve-rewards` command resolves rewards as `grpo train` does and serves them.
 * Not here: parity with `grpo reward` through Python clients (serve-rewards.test.ts).
 */
import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { mathAnswer, rewardFactories, type NamedReward } from '../rewards/index.js';
import { startRewardServer, type RunningRewardServer } from './reward-server.js';
import { resolveServedRewards } from '../cli/serve-rewards-command.js';
import { cliArguments } from '../../test/helpers/cli.js';

const repositoryRoot = new URL('../..', import.meta.url).pathname;
const directory = mkdtempSync(join(tmpdir(), 'grpo-reward-server-'));
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

async function post(url: string, body: string, method = 'POST'): Promise<{ status: number; text: string }> {
  const response = await fetch(url, {
    method,
    headers: { 'content-type': 'application/json' },
    body: method === 'GET' ? undefined : body,
  });
  return { status: response.status, text: await response.text() };
}

const explodes: NamedReward = {
  name: 'explodes',
  reward: () => {
    throw new Error('boom: the judge is down');
  },
  weight: 1,
};
const correct: NamedReward = { name: 'math-answer', reward: mathAnswer(), weight: 1 };

describe('malformed requests', () => {
  it.each([
    // [body, what the 400 must say]
    ['not json', 'the body is not valid JSON'],
    ['[1, 2]', 'the body must be a JSON object'],
    ['{"foo": 1, "bar": 2}', 'got the fields "foo", "bar"'], // neither protocol: both formats named
    ['{}', 'an empty object'],
    ['{"query": "a b"}', '"query" must be a list of strings'],
    ['{"query": ["a", 3]}', 'query[1] must be a string'],
    ['{"query": ["a", "b"], "prompts": ["a"]}', '"prompts" has 1 entries but "query" has 2'],
    ['{"query": ["a"], "labels": [[1]]}', 'labels[0] must be a string, a number or an object of columns'],
    ['{"query": ["a"], "prompts": [{"role": "user"}]}', 'prompts[0] must be a string or a list of'],
    ['{"prompt": "p", "response": 5}', '"response" must be a string'],
  ])('%s → 400 naming the problem', async (body, message) => {
    const url = await serve([correct]);
    const { status, text } = await post(`${url}/get_reward`, body);
    expect(status).toBe(400);
    const error = (JSON.parse(text) as { error: string }).error;
    expect(error).toContain(message);
    if (message.includes('fields') || message.includes('empty')) expect(error).toContain('"query"');
  });

  it('a row without a column a reward reads → 400 naming the reward, its option, the column and the row', async () => {
    const factory = rewardFactories.get('char-f1');
    const options = { referenceColumn: 'reference' };
    const charF1 = { name: 'char-f1', reward: factory.create(options), weight: 1, columns: factory.columns(options) };
    const url = await serve([correct, charF1]);
    const { status, text } = await post(`${url}/get_reward`, '{"prompt": "p", "response": "5", "label": "5"}');
    expect(status).toBe(400);
    expect((JSON.parse(text) as { error: string }).error).toBe(
      'rewards[1]: "char-f1" reads column "reference" (its referenceColumn), which request row 0 does not have (columns: answer)',
    );
    const labelled = '{"prompt": "p", "response": "5", "label": {"answer": "5", "reference": "5"}}';
    expect(await post(`${url}/get_reward`, labelled)).toEqual({ status: 200, text: '2' });
  });

  it('a body over the limit → 413', async () => {
    const server = await startRewardServer({ rewards: [correct], port: 0, maxBodyBytes: 1000 });
    servers.push(server);
    const { status, text } = await post(server.url, JSON.stringify({ query: ['x'.repeat(5000)] }));
    expect(status).toBe(413);
    expect(text).toContain('over the limit of 1000 bytes');
  });

  it('a label nested 10⁵ deep → 400 before parsing (it was a 500: stack overflow)', async () => {
    const url = await serve([correct]);
    const deep = `{"query": ["a"], "labels": [${'{"a": '.repeat(100_000)}1${'}'.repeat(100_000)}]}`;
    const { status, text } = await post(`${url}/get_reward`, deep);
    expect(status).toBe(400);
    expect(JSON.parse(text).error).toContain('more than 64 levels deep');
    const server = await startRewardServer({ rewards: [correct], port: 0, maxJsonDepth: 3 });
    servers.push(server);
    expect((await post(server.url, '{"query": ["a"], "labels": [{"a": {}}]}')).status).toBe(400);
    expect((await post(server.url, '{"query": ["a"], "labels": [{"a": "[[[{{{"}]}')).status).toBe(200); // brackets in strings do not count
  });

  it('JSON nested 10⁴ deep inside a label string → 400 naming the label (it was a 500: stack overflow)', async () => {
    // Found by reward-protocols-fuzz.test.ts: the label is one string to the body's depth check, and
    // the columns parsed from it overflowed the stack when the rows were grouped.
    const url = await serve([correct]);
    const label = `{"answer": "1", "deep": ${'['.repeat(10_000)}${']'.repeat(10_000)}}`;
    for (const [body, field] of [
      [{ response: 'x', label }, '"label"'],
      [{ query: ['a', 'b'], labels: ['1', label] }, 'labels[1]'],
    ] as const) {
      const { status, text } = await post(`${url}/get_reward`, JSON.stringify(body));
      expect(status).toBe(400);
      expect(JSON.parse(text).error).toBe(`${field} holds JSON nested more than 64 levels deep`);
    }
  });

  it('a wrong route or method is refused', async () => {
    const url = await serve([correct]);
    expect((await post(`${url}/rewards`, '{}')).status).toBe(404);
    expect((await post(`${url}/get_reward`, '', 'GET')).status).toBe(405);
  });
});

describe('request shapes', () => {
  it('an empty OpenRLHF list (what its extra remote_url shards get) is answered with empty lists', async () => {
    const url = await serve([correct]);
    const { status, text } = await post(url, JSON.stringify({ query: [], prompts: [], labels: [] }));
    expect(status).toBe(200);
    expect(JSON.parse(text)).toEqual({ rewards: [], scores: [], extra_logs: { 'reward/math-answer': [] }, errors: [] });
  });

  it('stripSuffixes cuts the end token OpenRLHF leaves in query, so exact-match sees the bare answer', async () => {
    const exact: NamedReward = {
      name: 'exact-match',
      reward: rewardFactories.get('exact-match').create({}),
      weight: 1,
    };
    const query = JSON.stringify({ query: ['Q: 2+2? A: 4<|im_end|>'], prompts: ['Q: 2+2? A: '], labels: ['4'] });
    const kept = await post(await serve([exact]), query);
    const server = await startRewardServer({ rewards: [exact], port: 0, stripSuffixes: ['</s>', '<|im_end|>'] });
    servers.push(server);
    const stripped = await post(server.url, query);
    expect(JSON.parse(kept.text).rewards).toEqual([0]); // "4<|im_end|>" is not "4"
    expect(JSON.parse(stripped.text).rewards).toEqual([1]);
  });

  it('slime: a chat-message prompt and a numeric label are accepted', async () => {
    const url = await serve([correct]);
    const prompt = [{ role: 'user', content: 'What is 3 + 4?' }];
    const right = await post(url, JSON.stringify({ prompt, response: '\\boxed{7}', label: 7 }));
    const wrong = await post(url, JSON.stringify({ prompt, response: '\\boxed{8}', label: 7 }));
    expect([right.status, right.text, wrong.status, wrong.text]).toEqual([200, '1', 200, '0']);
  });
});

describe('a reward that throws', () => {
  it('OpenRLHF: null reward for that row, the reason in errors, NaN in its extra_logs list', async () => {
    const url = await serve([correct, explodes, { ...explodes, name: 'logged-only', weight: 0 }]);
    const { status, text } = await post(
      url,
      JSON.stringify({ query: ['p \\boxed{4}', 'q \\boxed{5}'], prompts: ['p ', 'q '], labels: ['4', '6'] }),
    );
    expect(status).toBe(200);
    // NaN is written as Python's json writes it; read it back the same way here.
    const body = JSON.parse(text.replaceAll('NaN', '"NaN"')) as {
      rewards: unknown[];
      scores: unknown[];
      extra_logs: Record<string, unknown[]>;
      errors: { row: number; reward: string; status: string; message: string }[];
    };
    expect(body.rewards).toEqual([null, null]); // never 0: a weighted reward failed on both rows
    expect(body.scores).toEqual([null, null]);
    expect(body.extra_logs).toEqual({
      'reward/math-answer': [1, 0],
      'reward/explodes': ['NaN', 'NaN'],
      'reward/logged-only': ['NaN', 'NaN'],
    });
    expect(body.errors).toContainEqual({
      row: 1,
      reward: 'explodes',
      status: 'error',
      message: 'boom: the judge is down',
    });
    expect(body.errors).toHaveLength(4);
  });

  it('a weight-0 (logged only) reward that fails leaves the combined reward standing', async () => {
    const url = await serve([correct, { ...explodes, weight: 0 }]);
    const { text } = await post(url, JSON.stringify({ query: ['\\boxed{4}'], labels: ['4'] }));
    expect(JSON.parse(text.replaceAll('NaN', '"NaN"')).rewards).toEqual([1]);
  });

  it('slime: HTTP 500 with the reason (slime raises after its retries)', async () => {
    const url = await serve([correct, explodes]);
    const { status, text } = await post(url, JSON.stringify({ prompt: 'p', response: '\\boxed{4}', label: '4' }));
    expect(status).toBe(500);
    expect(JSON.parse(text).error).toContain('explodes error: boom: the judge is down');
  });

  it('verl: compute_score raises RuntimeError naming the reward', async () => {
    const url = await serve([correct, explodes]);
    const script = `
import importlib.util, json
spec = importlib.util.spec_from_file_location("custom_module", "scripts/verl_compute_score.py")
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
try:
    module.compute_score("x", "\\\\boxed{4}", "4", url=${JSON.stringify(`${url}/get_reward`)})
    print(json.dumps({"raised": None}))
except RuntimeError as error:
    print(json.dumps({"raised": str(error)}))
`;
    const output = await new Promise<string>((resolve, reject) =>
      execFile('python3', ['-c', script], { cwd: repositoryRoot }, (error, stdout, stderr) =>
        error ? reject(new Error(stderr)) : resolve(stdout),
      ),
    );
    expect(JSON.parse(output).raised).toContain('explodes error: boom: the judge is down');
  });
});

describe('concurrency', () => {
  it('two slow requests overlap: each reward waits until the other request has started', async () => {
    let started = 0;
    // Each call waits until a second call has started, however long that takes: were requests
    // handled one at a time, the first could only end through the server's reward time limit, as a
    // failed reward, and the expected '1's below would not come back. No clock is read here.
    let release: () => void = () => {};
    const bothStarted = new Promise<void>((resolve) => (release = resolve));
    const barrier: NamedReward = {
      name: 'barrier',
      weight: 1,
      reward: async () => {
        if (++started === 2) release();
        await bothStarted;
        return 1;
      },
    };
    const url = await serve([barrier]);
    const request = () => post(url, JSON.stringify({ prompt: 'p', response: 'r', label: null }));
    const [first, second] = await Promise.all([request(), request()]);
    expect([first.status, first.text, second.status, second.text]).toEqual([200, '1', 200, '1']);
  });
});

describe('grpo serve-rewards', () => {
  it('resolves --reward flags, a recipe and a task as grpo train does, and refuses what cannot be served', async () => {
    const fromFlags = await resolveServedRewards({ rewards: ['math-answer:2', 'think-format'] });
    expect(fromFlags.map(({ name, weight }) => [name, weight])).toEqual([
      ['math-answer', 2],
      ['think-format', 1],
    ]);
    const fromTask = await resolveServedRewards({ task: 'addition' });
    expect(fromTask.length).toBeGreaterThan(0);
    const codeRecipe = join(directory, 'recipe.mjs');
    writeFileSync(
      codeRecipe,
      'export default { config: {}, rewards: [{ name: "always-one", reward: () => 1, weight: 3 }] };\n',
    );
    const fromCode = await resolveServedRewards({ recipe: codeRecipe });
    expect(fromCode.map(({ name, weight }) => [name, weight])).toEqual([['always-one', 3]]);
    await expect(resolveServedRewards({})).rejects.toThrow('name the rewards to serve');
    await expect(resolveServedRewards({ recipe: codeRecipe, rewards: ['math-answer'] })).rejects.toThrow(
      'defines its rewards in code',
    );
    await expect(resolveServedRewards({ rewards: ['no-such-reward'] })).rejects.toThrow(
      'unknown reward "no-such-reward"',
    );
  });

  it('the command prints its address, serves, and exits 0 on SIGTERM', async () => {
    const child = spawn(
      process.execPath,
      [...cliArguments(), 'serve-rewards', '--reward', 'math-answer', '--port', '0'],
      { cwd: repositoryRoot, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stderr = '';
    child.stderr.on('data', (chunk) => (stderr += chunk));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    try {
      const address = await new Promise<string>((resolve, reject) => {
        let stdout = '';
        child.stdout.on('data', (chunk) => {
          stdout += chunk;
          if (stdout.includes('\n')) resolve(stdout.trim());
        });
        child.on('exit', () => reject(new Error(`serve-rewards exited: ${stderr}`)));
      });
      expect(address).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/get_reward$/);
      const { status, text } = await post(address, JSON.stringify({ prompt: 'p', response: '\\boxed{7}', label: '7' }));
      expect([status, text]).toEqual([200, '1']);
      expect(stderr).toContain('math-answer (weight 1)');
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited).toBe(0);
  }, 60_000);
});
