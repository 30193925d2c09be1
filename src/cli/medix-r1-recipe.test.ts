/**
 * MediX-R1's recipe (#109, recipes/papers/medix-r1.ts): its four reward parts as the authors'
 * medical.py scores them (case tables, each case saying why), the judge and embedding endpoints it
 * calls (a local OpenAI-compatible server here), their weighted sum as their `compute_score` overall,
 * the teacher's rows, and the recipe end to end through `grpo train` at a tiny size.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { grpoStepRecords, inProcessCli, tinyRunFlags } from '../../test/helpers/cli-in-process.js';
import { scoreRewards } from '../rewards/index.js';
import { makeRewardInput } from '../rewards/types.js';
import {
  cleanResponse,
  endpointJudge,
  medixAccuracyEmbedding,
  medixAccuracyLlm,
  medixFormat,
  medixModality,
  medixRewards,
  task,
} from '../../recipes/papers/medix-r1.js';
import { embeddingSimilarity } from '../../recipes/papers/r1-router.js';

const root = new URL('../../', import.meta.url).pathname;
const recipe = join(root, 'recipes/papers/medix-r1.ts');
const { runs, grpo } = inProcessCli('grpo-medix-r1-');

const gold = '<CT>subdural hematoma';

describe('the format and modality rewards (format_reward, modality_reward)', () => {
  it.each([
    ['<CT><thinking>crescent</thinking><answer>x</answer>', 1], // the full pattern after <thinking>
    ['<thinking>a</thinking>\n<answer>x</answer>', 1], // whitespace between the two blocks is allowed
    ['<thinking>a</thinking><answer>x</answer> more', 0], // text after </answer>: no fullmatch
    ['<answer>x</answer>', 0], // no <thinking>
    ['<thinking>a</thinking>', 0], // no answer block
  ])('format of %j is %d', (completion, expected) => {
    expect(medixFormat(cleanResponse(completion))).toBe(expected);
  });

  it.each([
    ['<CT><thinking>a</thinking><answer>x</answer>', 1], // the gold modality before <thinking>
    ['< ct > <thinking>a</thinking>', 1], // cleaned to "<ct><thinking>", compared ignoring case
    ['<MRI><thinking>a</thinking>', 0], // another modality
    ['CT <thinking>a</thinking>', 0], // "CT" is not "<CT>"
    ['<CT><answer>x</answer>', 0], // no <thinking>: 0
  ])('modality of %j is %d', (completion, expected) => {
    expect(medixModality(cleanResponse(completion), gold)).toBe(expected);
  });
});

describe('the accuracy rewards (accuracy_reward_llm, accuracy_reward_embed)', () => {
  const noJudge = undefined;
  it.each([
    ['<answer>subdural hematoma</answer>', 1, 1], // exact: both 1 with no judge or embedding call
    ['<answer> subdural hematoma. </answer>', 1, 1], // cleaned, stripped of spaces then dots
    ['subdural hematoma', 1, 1], // no <answer>: the whole response
    ['<answer>acute subdural hematoma</answer>', 0, 1], // no judge: 0; word cosine 2/√6 ≥ 0.8: 1
    ['<answer>hematoma</answer>', 0, 0], // cosine 1/√2 < 0.8
    ['<answer>x</answer>', 0, 0], // one character: invalid
    ['<answer>dx: subdural hematoma</answer>', 0, 0], // ":" marks a garbage answer
    ['<answer>subdural hematoma?</answer>', 0, 0], // so does "?"
    ['<answer></answer>', 0, 0], // empty
  ])('%j scores llm %d, embedding %d', async (completion, llm, embedding) => {
    const predict = cleanResponse(completion);
    expect(await medixAccuracyLlm(predict, gold, noJudge)).toBe(llm);
    const { wordCosine } = await import('../../recipes/papers/r1-router.js');
    expect(await medixAccuracyEmbedding(predict, gold, wordCosine)).toBe(embedding);
  });

  it('scores 0 when the ground truth has no <MODALITY> (their IndexError), and asks the judge only past the exact match', async () => {
    expect(await medixAccuracyLlm('<answer>ab</answer>', 'ab', () => 1)).toBe(0);
    const asked: string[][] = [];
    const judge = (given: string, expected: string) => (asked.push([given, expected]), 1);
    expect(await medixAccuracyLlm('<answer>subdural hematoma</answer>', gold, judge)).toBe(1);
    expect(asked).toEqual([]);
    expect(await medixAccuracyLlm('<answer>sdh</answer>', gold, judge)).toBe(1);
    expect(asked).toEqual([['sdh', 'subdural hematoma']]);
  });
});

describe('the judge and embedding endpoints', () => {
  it("sends their judge prompt (4 tokens, temperature 0) and the two answers' embeddings; YES anywhere is 1", async () => {
    const requests: { url?: string; body: Record<string, unknown> }[] = [];
    const server = createServer((request, response) => {
      let body = '';
      request.on('data', (chunk) => (body += chunk));
      request.on('end', () => {
        const parsed = JSON.parse(body) as Record<string, unknown>;
        requests.push({ url: request.url, body: parsed });
        response.setHeader('content-type', 'application/json');
        if (request.url === '/v1/embeddings')
          response.end(JSON.stringify({ data: [{ embedding: [3, 4] }, { embedding: [4, 3] }] }));
        else {
          const content = JSON.stringify(parsed.messages).includes('Predicted:sdh') ? 'yes.' : 'NO';
          response.end(JSON.stringify({ choices: [{ message: { content } }] }));
        }
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
    const saved = { url: process.env.OPENAI_BASE_URL, model: process.env.JUDGE_MODEL };
    process.env.OPENAI_BASE_URL = baseUrl;
    process.env.JUDGE_MODEL = 'judge';
    try {
      expect(await medixAccuracyLlm('<answer>sdh</answer>', gold, endpointJudge)).toBe(1); // "yes." upper-cased holds YES
      expect(await medixAccuracyLlm('<answer>stroke</answer>', gold, endpointJudge)).toBe(0);
      const chat = requests[0]!.body;
      expect(requests[0]!.url).toBe('/v1/chat/completions');
      expect(chat).toMatchObject({ model: 'judge', temperature: 0, max_tokens: 4 });
      expect((chat.messages as { role: string; content: string }[])[0]).toEqual({
        role: 'user',
        content:
          'You are a helpful assistant.\nGiven a predicted answer and the ground truth answer, respond with exactly "YES" if the content matches, otherwise respond with "NO".\nStart your response with "YES" or "NO" in uppercase.\n\nPredicted:sdh\nGround Truth:subdural hematoma\n',
      });
      // cos([3, 4], [4, 3]) = 0.96 ≥ 0.8.
      const similarity = embeddingSimilarity({ baseUrl, model: 'MedEmbed' });
      expect(await medixAccuracyEmbedding('<answer>sdh</answer>', gold, similarity)).toBe(1);
      expect(requests[2]).toEqual({
        url: '/v1/embeddings',
        body: { model: 'MedEmbed', input: ['sdh', 'subdural hematoma'] },
      });
    } finally {
      server.close();
      for (const [key, value] of [
        ['OPENAI_BASE_URL', saved.url],
        ['JUDGE_MODEL', saved.model],
      ] as const)
        if (value === undefined) delete process.env[key];
        else process.env[key] = value;
    }
  });
});

describe('the composite reward (compute_score overall)', () => {
  it.each([
    // Every part right: 0.9·(0.575 + 0.375 + 0.05) + 0.1.
    ['<CT><thinking>crescent</thinking><answer>subdural hematoma</answer>', 1],
    // Judge NO, embedding YES, right modality and format: 0.9·(0.375 + 0.05) + 0.1.
    ['<CT><thinking>crescent</thinking><answer>acute subdural hematoma</answer>', 0.9 * 0.425 + 0.1],
    // Wrong modality, right answer: 0.9·(0.575 + 0.375) + 0.1.
    ['<MRI><thinking>crescent</thinking><answer>subdural hematoma</answer>', 0.9 * 0.95 + 0.1],
    // No <thinking>: no format and no modality; the bare answer is still read as the answer: 0.9·0.95.
    ['subdural hematoma', 0.9 * 0.95],
  ])('%j scores %d', async (completion, expected) => {
    const rewards = medixRewards({ judge: undefined });
    const row = { prompt: 'p', solution: gold };
    const matrix = await scoreRewards(rewards, [[makeRewardInput({ prompt: 'p', completion, row })]], {
      timeoutMs: 10_000,
      concurrency: 1,
    });
    expect(matrix.failures).toEqual([]);
    const overall = rewards.reduce((sum, reward, k) => sum + (reward.weight as number) * matrix.scores[k]!, 0);
    expect(overall).toBeCloseTo(expected, 12);
  });

  it('names the missing solution column', async () => {
    const input = makeRewardInput({ prompt: 'p', completion: 'x', row: {} });
    const matrix = await scoreRewards(medixRewards(), [[input]], { timeoutMs: 10_000, concurrency: 1 });
    expect(matrix.failures[0]).toMatchObject({ reward: 'medix-accuracy-llm', status: 'error' });
    expect(matrix.failures[0]!.message).toMatch(/no "solution" column/);
  });
});

describe('rows and the teacher', () => {
  it("scores the teacher's right answers 1 overall and its slips below; every character is in the alphabet", async () => {
    const { default: loaded } = await import(recipe);
    const rows = task.trainExamples(200, 3);
    const rewards = medixRewards({ judge: undefined });
    for (const row of rows) {
      const right = task.demonstration(row, () => 0.9);
      expect(await task.isCorrect(row, right)).toBe(true);
      for (const draws of [
        [0.1, 0.9],
        [0.9, 0.1],
      ]) {
        const slip = task.demonstration(row, () => draws.shift()!);
        expect(await task.isCorrect(row, slip)).toBe(false); // wrong modality, or a neighbouring diagnosis
      }
      const text = `${String(row.prompt)}${task.demonstration(row, () => 0.1)}`;
      for (const character of text) expect(task.alphabet).toContain(character);
      expect(right.length + 1).toBeLessThanOrEqual(loaded.config.sampling.maxNewTokens);
    }
    const matrix = await scoreRewards(
      rewards,
      rows
        .slice(0, 4)
        .map((row) => [
          makeRewardInput({ prompt: String(row.prompt), completion: task.demonstration(row, () => 0.9), row }),
        ]),
      { timeoutMs: 10_000, concurrency: 1 },
    );
    expect(Array.from(matrix.scores)).toEqual(Array.from({ length: 16 }, () => 1));
  });
});

describe('recipes/papers/medix-r1.ts', () => {
  it('runs SFT and two GRPO steps through grpo train, scoring and logging the four rewards', async () => {
    await grpo('train', recipe, '--run-name', 'medix', ...tinyRunFlags(runs));
    const steps = grpoStepRecords(runs, 'medix');
    expect(steps).toHaveLength(2);
    for (const step of steps)
      for (const name of ['medix-accuracy-llm', 'medix-accuracy-embedding', 'medix-modality', 'medix-format']) {
        expect(step[`reward/${name}/invalid`]).toBe(0);
        expect(step[`reward/${name}/mean`]).toBeGreaterThanOrEqual(0);
      }
  });
});
