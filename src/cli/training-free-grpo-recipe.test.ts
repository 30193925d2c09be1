/**
 * Training-Free GRPO's recipe (#195, recipes/papers/training-free-grpo.ts): the library revision as
 * the authors' `_batch_update` applies it, the partially-correct filter (a mixed group yields
 * operations, an all-same group none: ALGORITHMS.md §8.5), the question template, and the practice
 * loop end to end — through the command line against a local OpenAI-compatible stub that stands in
 * for the policy and the updater LLM (no LLM can be had here): the experience the stub writes from
 * the mixed groups reaches the policy's prompt and lifts its reward from 0.5 to 1.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  applyRevision,
  main,
  MATH_OBJECTIVES,
  practice,
  promptWithExperiences,
  updateExperiences,
  type Attempt,
  type ChatFn,
} from '../../recipes/papers/training-free-grpo.js';
import type { ChatMessage, RewardFn } from '../index.js';

const EXPERIENCE = 'Carry check: When digits sum past 9, carry one to the next column.';

/** The updater stand-in: answers each stage in the format the authors parse. */
function stubLlm(calls: string[]): ChatFn {
  return async (messages: ChatMessage[]) => {
    const [system, user] = [messages[0]!.content, messages[1]!.content];
    if (system.includes('Analyse the one trajectory')) return (calls.push('summary'), 'It forgot the carry.');
    if (system.includes('Compare the attempts'))
      return (
        calls.push('advantage'),
        `<Performance Assessment>…</Performance Assessment>\n<Experiences>\n${EXPERIENCE}\n</Experiences>`
      );
    if (system.includes('For each new experience'))
      return (
        calls.push('group'),
        `\`\`\`json\n[{"operation": "ADD", "id": null, "content": "${EXPERIENCE}"}]\n\`\`\``
      );
    calls.push(user === 'No batch operations.' ? 'batch-empty' : 'batch');
    // The merge: one ADD however many groups proposed it, none when the library already has it.
    const proposes = user.includes(EXPERIENCE) && !user.includes(`Content: ${EXPERIENCE}`);
    return `\`\`\`json\n${JSON.stringify(proposes ? [{ operation: 'ADD', id: null, content: EXPERIENCE }] : [])}\n\`\`\``;
  };
}

/** The policy stand-in: right every time once the carry experience is in its prompt, else every other time. */
function stubPolicy(): ChatFn {
  let count = 0;
  return async (messages) => (messages.at(-1)!.content.includes(EXPERIENCE) || count++ % 2 === 0 ? '42' : '41');
}

const reward: RewardFn = ({ completion, row }) => (completion.trim() === String(row.answer) ? 1 : 0);

const attempt = (question: string, rewardValue: number): Attempt => ({
  question,
  answer: '42',
  prompt: question,
  completion: rewardValue ? '42' : '41',
  reward: rewardValue,
});

describe('Training-Free GRPO (recipes/papers/training-free-grpo.ts)', () => {
  it('applies a revision as _batch_update does, in insertion order, and renumbers G0, G1, …', () => {
    const library = new Map([
      ['G0', 'a'],
      ['G1', 'b'],
    ]);
    const revised = applyRevision(library, [
      { operation: 'ADD', id: null, content: 'c' }, // a new id, "2"
      { operation: 'UPDATE', id: 'G0', content: 'a2' }, // in place
      { operation: 'UPDATE', id: 'X9', content: 'd' }, // an unknown id adds, "3"
      { operation: 'DELETE', id: 'G1', content: 'obsolete' }, // removed
      { operation: 'DELETE', id: 'G0', content: '' }, // no content: skipped, G0 stays
      { operation: 'NONE', id: null, content: 'e' }, // no change
      { content: 'f' }, // no operation reads as ADD, "4"
    ]);
    // A plain object would list "2", "3", "4" before "G0" (integer keys first) and renumber a2 as G3.
    expect([...revised]).toEqual([
      ['G0', 'a2'],
      ['G1', 'c'],
      ['G2', 'd'],
      ['G3', 'f'],
    ]);
    expect([...library.keys()]).toEqual(['G0', 'G1']); // the input is not changed
  });

  it('puts the library in the question as processor.yaml does, "None" when empty', () => {
    const intro =
      'When solving problems, you MUST first carefully read and understand the helpful instructions and experiences:';
    expect(promptWithExperiences('2+2?', new Map())).toBe(`Please solve the problem:\n2+2?\n\n${intro}\nNone`);
    expect(
      promptWithExperiences(
        '2+2?',
        new Map([
          ['G0', 'x'],
          ['G1', 'y'],
        ]),
      ),
    ).toBe(`Please solve the problem:\n2+2?\n\n${intro}\n[G0]. x\n[G1]. y`);
  });

  it('turns a mixed group into operations and an all-same group into none', async () => {
    const calls: string[] = [];
    const mixed = await updateExperiences({
      attempts: [attempt('q1', 1), attempt('q1', 0), attempt('q1', 0), attempt('q2', 1), attempt('q2', 1)],
      experiences: new Map(),
      llm: stubLlm(calls),
      objectives: MATH_OBJECTIVES,
    });
    // q1 (mean 1/3) is summarised attempt by attempt, compared once, updated once; q2 (all right) is not read.
    expect(calls).toEqual(['summary', 'summary', 'summary', 'advantage', 'group', 'batch']);
    expect(mixed.operations).toEqual([{ operation: 'ADD', id: null, content: EXPERIENCE }]);
    expect([...mixed.experiences]).toEqual([['G0', EXPERIENCE]]);

    calls.length = 0;
    const same = await updateExperiences({
      attempts: [attempt('q1', 0), attempt('q1', 0), attempt('q2', 1), attempt('q2', 1)],
      experiences: new Map([['G0', 'kept']]),
      llm: stubLlm(calls),
      objectives: MATH_OBJECTIVES,
    });
    expect(calls).toEqual(['batch-empty']); // the authors still ask the batch merge, with "No batch operations."
    expect(same.operations).toEqual([]);
    expect([...same.experiences]).toEqual([['G0', 'kept']]);
  });

  it('drops a failed LLM call as the authors do, and keeps the library when the merge never parses', async () => {
    const failing: ChatFn = async (messages) => {
      if (messages[0]!.content.includes('Analyse the one trajectory')) throw new Error('HTTP 500');
      return 'not json';
    };
    const result = await updateExperiences({
      attempts: [attempt('q1', 1), attempt('q1', 0)],
      experiences: new Map([['G0', 'kept']]),
      llm: failing,
      objectives: MATH_OBJECTIVES,
    });
    expect(result.operations).toEqual([]);
    expect([...result.experiences]).toEqual([['G0', 'kept']]);
  });

  it('practices without weight updates: the learned experience lifts the next step from 0.5 to 1', async () => {
    const calls: string[] = [];
    const questions = ['1+41', '2+40', '3+39', '4+38'].map((question) => ({
      question,
      answer: '42',
      row: { answer: '42' },
    }));
    const { experiences, steps } = await practice({
      questions,
      policy: stubPolicy(),
      llm: stubLlm(calls),
      reward,
      epochs: 2,
      batchSize: 4,
      groupSize: 2,
    });
    expect(steps.map((step) => step.meanReward)).toEqual([0.5, 1]);
    expect(steps.map((step) => step.mixedGroups)).toEqual([4, 0]);
    expect(steps[0]!.operations).toBe(4);
    expect([...experiences]).toEqual([['G0', EXPERIENCE]]);
  });
});

describe('recipes/papers/training-free-grpo.ts on the command line', () => {
  let server: Server;
  let baseUrl = '';
  const requests: { model: string; temperature?: number; firstRole: string }[] = [];
  const llm = stubLlm([]);
  const policy = stubPolicy();
  const folder = mkdtempSync(join(tmpdir(), 'training-free-grpo-'));
  const data = join(folder, 'rows.jsonl');
  writeFileSync(
    data,
    ['1+41', '2+40', '3+39', '4+38'].map((prompt) => JSON.stringify({ prompt, answer: 42 })).join('\n'),
  );

  beforeAll(async () => {
    server = createServer((request, response) => {
      let body = '';
      request.on('data', (chunk: Buffer) => (body += chunk.toString()));
      request.on('end', () => {
        const parsed = JSON.parse(body) as { model: string; messages: ChatMessage[]; temperature?: number };
        requests.push({ model: parsed.model, temperature: parsed.temperature, firstRole: parsed.messages[0]!.role });
        const answer = parsed.model === 'policy' ? policy(parsed.messages, {}) : llm(parsed.messages, {});
        void answer.then((content) => {
          response.setHeader('content-type', 'application/json');
          response.end(JSON.stringify({ choices: [{ index: 0, message: { role: 'assistant', content } }] }));
        });
      });
    });
    await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  });
  afterAll(() => new Promise<void>((done) => server.close(() => done())));

  it('practices against an OpenAI-compatible endpoint and writes the library', async () => {
    const out = join(folder, 'out.json');
    const lines: string[] = [];
    await main(
      [
        ...['--data', data, '--reward', 'exact-match', '--base-url', baseUrl, '--model', 'updater'],
        ...['--policy-model', 'policy', '--epochs', '2', '--batch-size', '4', '--group-size', '2', '--out', out],
        ...['--eval-data', data, '--instructions', 'Answer with the number only.'],
      ],
      (line) => lines.push(line),
    );
    const written = JSON.parse(readFileSync(out, 'utf8')) as {
      experiences: Record<string, string>;
      steps: { meanReward: number }[];
    };
    expect(written.experiences).toEqual({ G0: EXPERIENCE });
    expect(written.steps.map((step) => step.meanReward)).toEqual([0.5, 1]);
    // The stub answers every other question right without the experience, every one with it.
    expect(lines.slice(0, 4)).toEqual([
      'eval mean reward without experiences: 0.5000',
      'step 0 (epoch 0): mean reward 0.5000, 4 mixed group(s), 4 operation(s), 1 experience(s)',
      'step 1 (epoch 1): mean reward 1.0000, 0 mixed group(s), 0 operation(s), 1 experience(s)',
      'eval mean reward with experiences: 1.0000',
    ]);
    const policyCalls = requests.filter((request) => request.model === 'policy');
    // 4 + 4 evaluation answers at the agent's temperature 0.3, 2 steps × 4 questions × 2 at the practice's 0.7.
    expect(policyCalls.map((request) => request.temperature).sort()).toEqual([
      ...new Array<number>(8).fill(0.3),
      ...new Array<number>(16).fill(0.7),
    ]);
    expect(policyCalls.every((request) => request.firstRole === 'system')).toBe(true);
    expect(
      requests.filter((request) => request.model === 'updater').every((request) => request.firstRole === 'system'),
    ).toBe(true);
  });

  it('names the flag or file that is wrong before any call', async () => {
    const before = requests.length;
    const run = (...argv: string[]) => main(['--base-url', baseUrl, '--model', 'updater', ...argv], () => {});
    await expect(run('--reward', 'exact-match')).rejects.toThrow('--data FILE is required');
    await expect(run('--data', join(folder, 'missing.jsonl'))).rejects.toThrow(
      /--data .*missing\.jsonl: cannot read it/,
    );
    await expect(run('--data', data, '--group-size', '0')).rejects.toThrow(
      '--group-size 0: must be a whole number > 0',
    );
    await expect(run('--data', data, '--batch-size', '5')).rejects.toThrow('--batch-size 5: --data');
    await expect(run('--data', data, '--reward', 'no-such-reward')).rejects.toThrow('no-such-reward');
    writeFileSync(join(folder, 'bad.jsonl'), '{"prompt": "x"}\n');
    await expect(run('--data', join(folder, 'bad.jsonl'))).rejects.toThrow(
      /bad\.jsonl:1: needs a string "prompt" and an "answer"/,
    );
    expect(requests.length).toBe(before);
  });
});
