/**
 * The reward-design papers of issue 31 trained through `grpo train --reward NAME` (docs/papers.md):
 * ReFIne's `refine-trust` (#235) and Posterior-GRPO's `outcome-gated-process` (#234, its process
 * reward an `llm-judge` over a scripted OpenAI-compatible server on 127.0.0.1, standing in for the
 * paper's reasoning reward model), MASA's `masa` (#253) and GRPO-λ's `grpo-lambda` (#30). Each run's metrics.jsonl must log `reward/<name>/mean` within the
 * reward's range with no failed call, its samples.jsonl must show every logged score is the reward's
 * for that completion, and some group's scores (and so advantages) differ.
 *
 * Not here: the rewards' values on hand-made inputs (src/rewards/paper-rewards-b.test.ts).
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runTrainCommand } from './train-command.js';
import { grpoLambdaScores } from '../rewards/grpo-lambda.js';
import { extractMasaPrediction, masaMetaScore } from '../rewards/masa.js';
import { refineTrust } from '../rewards/refine-trust.js';
import { makeRewardInput } from '../rewards/types.js';

const scratch = mkdtempSync(join(tmpdir(), 'grpo-paper-rewards-b-'));

// The scripted judge: "Score: N" with N the completion's length (at most 10), so right answers of
// different lengths get different process scores. It records what it was asked to grade.
const judged: string[] = [];
let server: Server;
let baseUrl = '';
beforeAll(async () => {
  server = createServer((request, response) => {
    let raw = '';
    request.on('data', (chunk) => (raw += chunk));
    request.on('end', () => {
      const messages = (JSON.parse(raw) as { messages: Array<{ content: string }> }).messages;
      const completion = messages[messages.length - 1]!.content.split('Response:\n').pop()!;
      judged.push(completion);
      const content = `Score: ${Math.min(10, completion.length)}`;
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ choices: [{ message: { role: 'assistant', content } }] }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as { port: number }).port}/v1`;
});
afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
  rmSync(scratch, { recursive: true, force: true });
});

// The addition task's default character model, SFT-trained until about half its sampled answers are
// right, so groups mix right and wrong (as src/cli/train-paper-rewards.test.ts).
const additionRun = [
  'sft.steps=600',
  'sampling.temperature=0.7',
  'logging.samplesPerStep=4',
  'grpo.steps=2',
  'grpo.promptsPerStep=4',
  'grpo.microBatchSize=16',
  'sampling.groupSize=4',
  'sampling.maxNewTokens=5',
  'evaluation.examples=2',
  'checkpoint.every=0',
  `logging.runsDirectory=${JSON.stringify(scratch)}`,
];

interface Group {
  step: number;
  prompt: string;
  answer: string;
  completions: Array<{ text: string; rewards: Record<string, number | null>; advantage: number; length: number }>;
}

const readLines = <T>(file: string): T[] =>
  readFileSync(file, 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as T);

/** Trains with one reward, checks it was logged within [low, high] and reached the advantages; returns the logged groups. */
async function train(runName: string, reward: string, [low, high]: [number, number]) {
  const name = reward.split(':')[0]!;
  expect(await runTrainCommand({ set: additionRun, runName, quiet: true, data: { rewards: [reward] } })).toBe(0);
  const steps = readLines<Record<string, number>>(join(scratch, runName, 'metrics.jsonl')).filter(
    (line) => 'reward/mean' in line,
  );
  expect(steps).toHaveLength(2);
  for (const step of steps) {
    expect(step[`reward/${name}/invalid`]).toBe(0);
    expect(step[`reward/${name}/mean`]).toBeGreaterThanOrEqual(low);
    expect(step[`reward/${name}/mean`]).toBeLessThanOrEqual(high);
  }
  const groups = readLines<Group>(join(scratch, runName, 'samples.jsonl'));
  const scoresOf = (group: Group) => group.completions.map((completion) => completion.rewards[name]!);
  const mixed = groups.filter((group) => new Set(scoresOf(group)).size > 1);
  expect(mixed.length).toBeGreaterThan(0);
  for (const group of mixed) expect(new Set(group.completions.map((c) => c.advantage)).size).toBeGreaterThan(1);
  return { groups, scoresOf };
}

// Each run SFT-trains the model first (about 45 s on one core), more than vitest's default 60 s allows on a busy machine.
const isRight = (text: string, answer: string) => text.trim() === answer;

describe('reward-design papers trained through grpo train --reward', () => {
  it("ReFIne: refine-trust is the authors' reward_fn with the task's check as correctness", async () => {
    const { groups, scoresOf } = await train('refine', 'refine-trust', [-0.0625, 1]);
    for (const group of groups) {
      const scores = scoresOf(group);
      for (const [index, { text }] of group.completions.entries()) {
        const expected = await refineTrust({ correctness: () => (isRight(text, group.answer) ? 1 : 0) })(
          makeRewardInput({ completion: text }),
        );
        expect(scores[index]).toBeCloseTo(expected!, 6);
      }
    }
  }, 240_000);

  it('Posterior-GRPO: outcome-gated-process adds the judge score to right answers only', async () => {
    judged.length = 0;
    const judge = { name: 'llm-judge', options: { baseUrl, model: 'reasoning-rm', maxAttempts: 1 } };
    const reward = `outcome-gated-process:${JSON.stringify({ process: judge })}`;
    const { groups, scoresOf } = await train('posterior-grpo', reward, [0, 2]);
    expect(judged.length).toBeGreaterThan(0); // the process reward came from the judge endpoint
    for (const group of groups) {
      const scores = scoresOf(group);
      group.completions.forEach(({ text }, index) => {
        const expected = isRight(text, group.answer) ? 1 + Math.min(10, text.length) / 10 : 0;
        expect(scores[index]).toBeCloseTo(expected, 6);
      });
    }
  }, 240_000);

  it("GRPO-λ: grpo-lambda penalises length only in the step's top-λ groups by correctness ratio", async () => {
    const { groups, scoresOf } = await train('grpo-lambda', 'grpo-lambda:{"topFraction":0.25}', [0, 1]);
    // topFraction 0.25 of 4 groups: the top one. Right answers in a group that another group outranks
    // score 1 whatever their length; right answers in the top group score 1 − 0.6·σ(z) < 1.
    let plainRight = 0;
    let penalised = 0;
    for (const step of new Set(groups.map((group) => group.step))) {
      const ofStep = groups.filter((group) => group.step === step);
      expect(ofStep, 'every group of the step is logged, in batch order').toHaveLength(4);
      const asSeen = ofStep.map((group) => ({
        correct: group.completions.map(({ text }) => isRight(text, group.answer)),
        lengths: group.completions.map(({ length }) => length),
      }));
      const expected = grpoLambdaScores(asSeen, { topFraction: 0.25, alpha: 0.6 });
      ofStep.forEach((group, g) => {
        scoresOf(group).forEach((score, index) => expect(score).toBeCloseTo(expected[g]![index]!, 9));
        const ratio = asSeen[g]!.correct.filter(Boolean).length / 4;
        const higher = asSeen.filter((other) => other.correct.filter(Boolean).length / 4 > ratio).length;
        scoresOf(group).forEach((score, index) => {
          if (!asSeen[g]!.correct[index]) return;
          if (higher >= 1) plainRight += score === 1 ? 1 : 0;
          else if (score < 1) penalised++;
        });
      });
    }
    expect(penalised, 'right answers in top groups are penalised by length').toBeGreaterThan(0);
    expect(plainRight, 'right answers below the top groups keep 1').toBeGreaterThan(0);
  }, 240_000);

  it("MASA: recipes/papers/masa.ts scores each meta group against its problem's solution group of the step", async () => {
    // A small model and a short SFT (about 30 s): enough for some meta completions to be the JSON form.
    const set = [
      'model.hiddenSize=32',
      'model.numLayers=1',
      'sft.steps=300',
      'sft.batchSize=32',
      'grpo.steps=2',
      'grpo.promptsPerStep=4',
      'grpo.microBatchSize=16',
      'sampling.groupSize=4',
      'logging.samplesPerStep=4', // every group of the step
      'evaluation.examples=2',
      'checkpoint.every=0',
      `logging.runsDirectory=${JSON.stringify(scratch)}`,
    ];
    expect(await runTrainCommand({ recipe: 'recipes/papers/masa.ts', set, runName: 'masa', quiet: true })).toBe(0);
    const config = JSON.parse(readFileSync(join(scratch, 'masa', 'config.json'), 'utf8'));
    expect(config.grpo.drawTogether).toBe('pair_id');
    const groups = readLines<Group>(join(scratch, 'masa', 'samples.jsonl'));
    const steps = new Set(groups.map((group) => group.step));
    expect(steps.size).toBe(2);
    let metaScores = 0;
    for (const step of steps) {
      const ofStep = groups.filter((group) => group.step === step);
      const metas = ofStep.filter((group) => group.prompt.startsWith('?'));
      expect(metas.length, 'half the groups are meta rows').toBe(ofStep.length / 2);
      for (const meta of metas) {
        const solution = ofStep.find((group) => `?${group.prompt}` === meta.prompt)!;
        expect(solution, 'its problem is in the same step').toBeDefined();
        const right = solution.completions.map(({ text }) => (isRight(text, solution.answer) ? 1 : 0));
        solution.completions.forEach((completion, index) => expect(completion.rewards.masa).toBe(right[index]));
        const stats = {
          problem: meta.prompt,
          responses: solution.completions.map(({ text }) => text),
          scores: right,
          lengths: solution.completions.map(({ length }) => length),
        };
        for (const { text, rewards } of meta.completions) {
          expect(rewards.masa).toBeCloseTo(masaMetaScore(extractMasaPrediction(text), stats).score, 9);
          if (rewards.masa! > 0) metaScores++;
        }
      }
    }
    expect(metaScores, 'some meta predictions parse and score').toBeGreaterThan(0);
  }, 240_000);
});
