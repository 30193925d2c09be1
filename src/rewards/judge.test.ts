/** Tests of the LLM-judge reward against a scripted OpenAI-compatible server on 127.0.0.1. */
import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { llmJudge, parseScore, parseYesNo, rubricScore } from './judge.js';
import { makeRewardInput } from './types.js';

interface Seen {
  authorization: string | undefined;
  body: { model: string; messages: Array<{ role: string; content: string }> };
}

let server: Server;
let baseUrl = '';
const seen: Seen[] = [];
/** Replies to send, in order: [status, content]; when empty, answers "Score: 7". */
const script: Array<[number, string]> = [];

beforeAll(async () => {
  server = createServer((request, response) => {
    let raw = '';
    request.on('data', (chunk) => (raw += chunk));
    request.on('end', () => {
      seen.push({ authorization: request.headers.authorization, body: JSON.parse(raw) });
      const [status, content] = script.shift() ?? [200, 'Score: 7'];
      response.writeHead(status, { 'content-type': 'application/json' });
      response.end(
        status === 200 ? JSON.stringify({ choices: [{ message: { role: 'assistant', content } }] }) : '{"error":"x"}',
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as { port: number }).port}/v1`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

const input = (completion: string, row: Record<string, unknown> = {}) =>
  makeRewardInput({ prompt: 'What is 2+2?', completion, row });

describe('llmJudge', () => {
  it('scales a 0–10 score to [0, 1], sends model, rubric and key', async () => {
    process.env.GRPO_TEST_JUDGE_KEY = 'sk-test';
    try {
      seen.length = 0;
      script.push([200, 'Reasoning... Score: 8']);
      const reward = llmJudge({
        baseUrl,
        model: 'judge-1',
        apiKeyEnv: 'GRPO_TEST_JUDGE_KEY',
        rubric: 'Check arithmetic.',
      });
      expect(await reward(input('4'))).toBeCloseTo(0.8, 12);
      expect(seen[0]!.authorization).toBe('Bearer sk-test');
      expect(seen[0]!.body.model).toBe('judge-1');
      expect(seen[0]!.body.messages[0]!.content).toContain('Check arithmetic.');
      expect(seen[0]!.body.messages[1]!.content).toContain('What is 2+2?');
    } finally {
      delete process.env.GRPO_TEST_JUDGE_KEY;
    }
  });

  it('retries 500, 429 and unparseable replies with back-off, then caches the result', async () => {
    seen.length = 0;
    script.push([500, ''], [429, ''], [200, 'I refuse to grade'], [200, 'Score: 3']);
    const reward = llmJudge({ baseUrl, model: 'm', backoffMs: 1 });
    expect(await reward(input('five'))).toBeCloseTo(0.3, 12);
    expect(seen.length).toBe(4); // three failures, then success
    expect(await reward(input('five'))).toBeCloseTo(0.3, 12);
    expect(seen.length).toBe(4); // the same input is served from the cache
  });

  it('gives up after maxAttempts (an error, so the sample leaves the loss) and does not cache failures', async () => {
    seen.length = 0;
    script.push([503, ''], [503, '']);
    const reward = llmJudge({ baseUrl, model: 'm', backoffMs: 1, maxAttempts: 2 });
    await expect(reward(input('x'))).rejects.toThrow(/gave up after 2 attempts: HTTP 503/);
    expect(await reward(input('x'))).toBeCloseTo(0.7, 12); // retried later, default script answer
  });

  it('does not retry a 4xx other than 429', async () => {
    seen.length = 0;
    script.push([401, '']);
    await expect(llmJudge({ baseUrl, model: 'm', backoffMs: 1 })(input('y'))).rejects.toThrow(/HTTP 401/);
    expect(seen.length).toBe(1);
  });

  it('yes-no and criteria modes, with a reference column', async () => {
    script.push([200, 'YES'], [200, '1: YES\n2: NO\n3: YES']);
    expect(await llmJudge({ baseUrl, model: 'm', mode: 'yes-no' })(input('4'))).toBe(1);
    const criteria = [{ description: 'correct', weight: 2 }, { description: 'brief' }, { description: 'polite' }];
    seen.length = 0;
    expect(
      await llmJudge({ baseUrl, model: 'm', mode: 'criteria', criteria, referenceColumn: 'reference' })(
        input('4', { reference: 'four' }),
      ),
    ).toBe(0.75);
    expect(seen[0]!.body.messages[1]!.content).toContain('Reference answer:\nfour');
  });

  it('explains missing configuration', () => {
    const saved = process.env.OPENAI_BASE_URL;
    delete process.env.OPENAI_BASE_URL;
    try {
      expect(() => llmJudge({ model: 'm' })).toThrow(/OPENAI_BASE_URL/); // at construction, not mid-run
    } finally {
      if (saved !== undefined) process.env.OPENAI_BASE_URL = saved;
    }
  });
});

describe('parsers', () => {
  const scores: Array<[string, number | null, string]> = [
    ['Score: 7', 7, 'labelled'],
    ['first 3, then Score: 9.5', 9.5, 'label wins over other numbers'],
    ['I give it 6', 6, 'last number when unlabelled'],
    ['Score: 11', null, 'out of range'],
    ['great answer', null, 'no number'],
  ];
  it.each(scores)('parseScore(%j) → %j (%s)', (reply, expected) => {
    if (expected === null) expect(() => parseScore(reply, 0, 10)).toThrow();
    else expect(parseScore(reply, 0, 10)).toBe(expected);
  });
  it('parseYesNo', () => {
    expect([parseYesNo('YES.'), parseYesNo('no')]).toEqual([1, 0]);
    expect(() => parseYesNo('maybe')).toThrow(/no YES\/NO/);
  });
  it('rubricScore §5.11 vector: [1,0,1] with weights [2,1,1] → 0.75', () => {
    expect(rubricScore([1, 0, 1], [2, 1, 1])).toBe(0.75);
  });
});
