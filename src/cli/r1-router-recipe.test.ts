/**
 * R1-Router's Step-GRPO recipe (#210, recipes/papers/r1-router.ts): the route-step and answer-step
 * rewards as the authors' step.py scores them (case tables, each case saying why), the step rows and
 * the teacher's demonstrations, and the recipe end to end through `grpo train` at a tiny size.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { grpoStepRecords, inProcessCli, tinyRunFlags } from '../../test/helpers/cli-in-process.js';
import {
  answerReward,
  embeddingSimilarity,
  routeReward,
  stepReward,
  task,
  wordCosine,
} from '../../recipes/papers/r1-router.js';

const root = new URL('../../', import.meta.url).pathname;
const recipe = join(root, 'recipes/papers/r1-router.ts');
const { runs, grpo } = inProcessCli('grpo-r1-router-');

const gold = { query: 'where was mira born', retriever: ['text retriever'] };
const route = (query: string, kb: string, think = '<think>t</think>') =>
  `${think}<sub-question>${query}</sub-question><ret>${kb}</ret>`;

describe('the route-step reward (ret_accuracy_reward)', () => {
  it.each([
    [route('where was mira born', 'text retriever'), 1], // the gold sub-question and the one gold KB
    [route('Where Was Mira Born', 'Text Retriever'), 1], // the output is lower-cased first
    [route('where was mira born', 'table retriever'), 0.5], // right question, wrong KB
    [route('where was mira born', 'text retriever, table retriever'), 0.5], // two KBs: never the one right KB
    [route('mira born', 'text retriever'), 0.5 + 0.5 * (2 / Math.sqrt(2 * 4))], // half the words: cosine 1/√2
    [route('where was mira born', 'none, text retriever'), 0], // "none" only alone
    [route('where was mira born', 'web retriever'), 0], // not one of their four names
    [route('where was mira born', 'text retriever', ''), 0], // no <think>: the regex fails, 0
    ['<think>t</think><ret>text retriever</ret>', 0], // no sub-question
  ])('%s scores %d', async (completion, expected) => {
    expect(await routeReward(completion, gold)).toBeCloseTo(expected, 12);
  });

  it('takes the similarity as an argument (their BGE-M3 cosine, a word-count cosine by default)', async () => {
    expect(wordCosine('a b', 'a b')).toBe(1);
    expect(wordCosine('a a b', 'a c')).toBeCloseTo(2 / Math.sqrt(5 * 2), 12);
    expect(await routeReward(route('anything', 'text retriever'), gold, () => 0.8)).toBeCloseTo(0.9, 12);
  });

  it('reads the cosine from an OpenAI-compatible /embeddings endpoint (their BGE-M3), and names a bad reply', async () => {
    const requests: unknown[] = [];
    let reply: unknown = { data: [{ embedding: [3, 4] }, { embedding: [4, 3] }] };
    const server = createServer((request, response) => {
      let body = '';
      request.on('data', (chunk) => (body += chunk));
      request.on('end', () => {
        requests.push({ url: request.url, body: JSON.parse(body) });
        response.setHeader('content-type', 'application/json');
        response.end(JSON.stringify(reply));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/`;
      const similarity = embeddingSimilarity({ baseUrl, model: 'bge-m3' });
      // cos([3, 4], [4, 3]) = 24/25; the route reward 0.5·0.96 + 0.5.
      expect(await routeReward(route('where was mira born', 'text retriever'), gold, similarity)).toBeCloseTo(0.98, 12);
      expect(requests).toEqual([
        { url: '/v1/embeddings', body: { model: 'bge-m3', input: ['where was mira born', 'where was mira born'] } },
      ]);
      reply = { data: [{ embedding: [1, 0] }] };
      await expect(similarity('a', 'b')).rejects.toThrow(/has no data\[0\]\.embedding and data\[1\]\.embedding/);
    } finally {
      server.close();
    }
  });
});

describe('the answer-step reward (ans_accuracy_reward)', () => {
  const answer = (text: string) => `<think>t</think><answer>${text}</answer>`;
  it.each([
    [answer('oslo'), ['oslo'], 1], // exact
    [answer('The Oslo.'), ['oslo'], 1], // lower-cased, "the" and the final period removed
    [answer('oslo lima'), ['oslo'], 1], // recall, not precision: every gold token is there
    [answer('lima'), ['oslo'], 0], // recall 0
    [answer('seven'), ['7'], 1], // number words become digits on both sides
    [answer('a b c'), ['a b c d e f'], 0.5], // a gold answer of more than 5 words: the recall itself
    [answer('a b c'), ['a b c d e'], 0], // at most 5 words: 1 only at recall 1
    [answer('x'), ['y', 'x z'], 0], // several golds: the best-F1 gold's recall (1/2) is not 1
    [answer('x z'), ['y', 'x z'], 1],
    ['<answer>oslo</answer>', ['oslo'], 0], // no <think>
    ['<think>t</think>oslo', ['oslo'], 0], // no <answer>
  ])('%s against %j scores %d', (completion, golds, expected) => {
    expect(answerReward(completion, golds)).toBeCloseTo(expected, 12);
  });
});

describe('step rows and the teacher', () => {
  const rows = task.trainExamples(400, 3);

  it('gives every step kind, and the teacher right (draw 0.9) earns 1 on each while its wrong steps do not', async () => {
    expect(new Set(rows.map((row) => row.stepIndex))).toEqual(new Set([0, 1, 2, 3, 4]));
    for (const row of rows) {
      expect(
        await stepReward(
          task.demonstration(row, () => 0.9),
          row,
        ),
      ).toBe(1);
      expect(
        await stepReward(
          task.demonstration(row, () => 0.1),
          row,
        ),
      ).toBeLessThan(1);
      expect(
        await task.isCorrect(
          row,
          task.demonstration(row, () => 0.9),
        ),
      ).toBe(true);
    }
  });

  it('fits the recipe: every prompt and demonstration character is in the alphabet, every step within maxNewTokens', async () => {
    const { default: loaded } = await import(recipe);
    for (const row of rows) {
      for (const draw of [0.9, 0.1, 0.4]) {
        const text = `${String(row.prompt)}${task.demonstration(row, () => draw)}`;
        for (const character of text) expect(task.alphabet).toContain(character);
        expect(task.demonstration(row, () => draw).length + 1).toBeLessThanOrEqual(loaded.config.sampling.maxNewTokens);
      }
    }
  });

  it('refuses a row whose step_type is neither ret nor ans, naming the column', async () => {
    await expect(stepReward('x', { step_type: 'route' })).rejects.toThrow(
      /step_type must be "ret" or "ans", got "route"/,
    );
  });
});

describe('recipes/papers/r1-router.ts', () => {
  it('runs SFT and two Step-GRPO steps through grpo train, scoring every step row', async () => {
    const tiny = tinyRunFlags(runs);
    await grpo('train', recipe, '--run-name', 'step-grpo', ...tiny);
    const steps = grpoStepRecords(runs, 'step-grpo');
    expect(steps).toHaveLength(2);
    for (const step of steps) {
      expect(step['reward/step/invalid']).toBe(0);
      const mean = step['reward/step/mean'] as number;
      expect(mean).toBeGreaterThanOrEqual(0);
      expect(mean).toBeLessThanOrEqual(1);
    }
  });
});
