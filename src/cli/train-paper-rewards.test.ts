/**
 * The papers whose method is a reward, trained through `grpo train --reward NAME` (docs/papers.md):
 * TruthRL's `ternary-truthfulness` (#61), TensorBLEU's `bleu` (#80), Train-Long-Think-Short's
 * `length-budget` (#243), GRPO-λ's `length-among-correct` (#30) and OTC-PO's `tool-efficiency` (#62,
 * on the search-agent recipe). Each run's metrics.jsonl must
 * log `reward/<name>/mean` within the reward's range with no failed call, and its samples.jsonl must
 * show the reward reached the advantage: every logged score is what the reward gives that
 * completion, and within some group the scores differ, so the advantages do too.
 *
 * Not here: what the rewards compute on hand-made inputs (src/rewards tests), or learning curves.
 * The runs are seeded, so which groups differ is the same every run.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runTrainCommand } from './train-command.js';
import { loadTokenizer } from '../model/tokenizer.js';
import { ternaryTruthfulness } from '../rewards/length.js';
import { toolCallReward } from '../rewards/tool-efficiency.js';
import searchAgent from '../../recipes/search-agent.js';
import { tinyStoriesModel } from '../../test/helpers/fixtures.js';

const scratch = mkdtempSync(join(tmpdir(), 'grpo-paper-rewards-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

// The addition task's default character model, SFT-trained long enough (600 steps) that sampled at
// temperature 0.7 about half its answers are right (16/32 logged at seed 0; 14–16 at seeds 1–3), so
// groups mix right and wrong whatever the CPU's rounding.
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

// A small model SFT-trained briefly: its answers are rarely right, but their lengths vary within a
// group (a trained model's answers have the length of the sum), which the length rewards need.
const briefAdditionRun = [
  'model.hiddenSize=32',
  'model.numLayers=1',
  'model.numHeads=2',
  'sft.steps=120',
  'sft.batchSize=32',
  'sft.learningRate=3e-3',
  ...additionRun.filter((setting) => !/^(sft\.steps|sampling\.temperature|logging\.samplesPerStep)=/.test(setting)),
];

interface Completion {
  text: string;
  rewards: Record<string, number | null>;
  advantage: number;
  length: number;
  episode?: { toolCalls: unknown[] };
}
interface Group {
  step: number;
  answer: string;
  completions: Completion[];
}

const readLines = <T>(file: string): T[] =>
  readFileSync(file, 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as T);

/** Trains, then checks the reward was logged within [low, high] and returns the logged groups. */
async function train(
  runName: string,
  reward: string,
  [low, high]: [number, number],
  set: string[],
  { recipe, ...data }: { recipe?: string; model?: string; data?: string } = {},
) {
  const name = reward.split(':')[0]!;
  expect(await runTrainCommand({ recipe, set, runName, quiet: true, data: { rewards: [reward], ...data } })).toBe(0);
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
  expect(groups.length).toBeGreaterThan(0);
  const scoresOf = (group: Group) => group.completions.map((completion) => completion.rewards[name]!);
  // The reward reached the advantage: in some group it differs, and so do the advantages.
  const mixed = groups.filter((group) => new Set(scoresOf(group)).size > 1);
  expect(mixed.length).toBeGreaterThan(0);
  for (const group of mixed) expect(new Set(group.completions.map((c) => c.advantage)).size).toBeGreaterThan(1);
  return { groups, scoresOf };
}

describe('paper rewards trained through grpo train --reward', () => {
  it('TruthRL: ternary-truthfulness scores +1 right, −1 wrong (0 for an abstention) on the addition task', async () => {
    const { groups, scoresOf } = await train('truthrl', 'ternary-truthfulness', [-1, 1], additionRun);
    const reward = ternaryTruthfulness();
    for (const group of groups) {
      scoresOf(group).forEach((score, index) => {
        const completion = group.completions[index]!.text;
        expect(score).toBe(reward({ completion, completionIds: [], row: { answer: group.answer } } as never));
      });
    }
    expect(groups.some((group) => scoresOf(group).includes(-1) && scoresOf(group).includes(1))).toBe(true);
  });

  it("Train-Long-Think-Short: length-budget is 1 within the step's shrinking budget, 0 beyond it", async () => {
    const reward = 'length-budget:{"budget":3,"decayFactor":0.5,"decayEvery":1}'; // B(t) = 3, then 1.5
    const { groups, scoresOf } = await train('length-budget', reward, [0, 1], briefAdditionRun);
    const firstStep = Math.min(...groups.map((group) => group.step));
    expect(new Set(groups.map((group) => group.step)).size).toBe(2); // both steps logged
    for (const group of groups) {
      const budget = 3 * 0.5 ** (group.step - firstStep);
      scoresOf(group).forEach((score, index) => expect(score).toBe(group.completions[index]!.length <= budget ? 1 : 0));
    }
  });

  it('GRPO-λ: length-among-correct gives 0 to wrong answers and at most 1 to right ones', async () => {
    const { groups, scoresOf } = await train('grpo-lambda', 'length-among-correct', [0, 1], additionRun);
    for (const group of groups)
      scoresOf(group).forEach((score, index) => {
        const right = group.completions[index]!.text.trim() === group.answer;
        if (right)
          expect(score).toBeGreaterThanOrEqual(0.8); // 1 − α·ℓ with α = 0.2
        else expect(score).toBe(0);
      });
  });

  it('TensorBLEU: token-id bleu against a reference column, on the TinyStories model and a --data file', async () => {
    const rows = join(scratch, 'bleu-rows.jsonl');
    // TensorBLEU's token-id BLEU: the reference is a continuation in the model's own token ids.
    const tokenizer = loadTokenizer(tinyStoriesModel);
    const stories = [
      ['Once upon a time there was', ' an old man named Tim. He was a girl. She was very happy.'],
      ['The dog ran to the park', ' and played with a big red ball. He was very happy.'],
    ];
    writeFileSync(
      rows,
      Array.from({ length: 8 }, (_, i) => {
        const [prompt, continuation] = stories[i % 2]!;
        return JSON.stringify({ prompt, answer: '', reference: tokenizer.encode(continuation!) });
      }).join('\n'),
    );
    const set = [
      'sft.steps=0',
      'grpo.steps=2',
      'grpo.promptsPerStep=2',
      'grpo.microBatchSize=8',
      'sampling.groupSize=4',
      'sampling.maxNewTokens=8',
      'evaluation.examples=1',
      'checkpoint.every=0',
      `logging.runsDirectory=${JSON.stringify(scratch)}`,
    ];
    const { groups } = await train('tensorbleu', 'bleu:{"unit":"ids","maxOrder":2}', [0, 1], set, {
      model: tinyStoriesModel,
      data: rows,
    });
    // Every completion is 8 tokens, so the scores differ by their n-grams, not by brevity.
    for (const group of groups) for (const completion of group.completions) expect(completion.length).toBe(8);
  });

  it("OTC-PO: tool-efficiency scores the search agent by its tool calls and the recipe's answer check", async () => {
    // The recipe's model made small so its SFT takes seconds; it then answers some training questions
    // right, a few of them after a search. OTC-PPO's n = 0 makes every call cost, so those score
    // r_tool(1, 0) = 0.5 where a right answer without a call scores 1 (OTC-GRPO's group n is unit-tested).
    const set = [
      'seed=1',
      'model.hiddenSize=32',
      'model.numLayers=1',
      'sft.steps=200',
      'sft.learningRate=1e-2',
      'grpo.steps=2',
      'grpo.promptsPerStep=8',
      'grpo.microBatchSize=64',
      'sampling.groupSize=8',
      'evaluation.examples=2',
      'checkpoint.every=0',
      'logging.samplesPerStep=8', // every group of the step
      `logging.runsDirectory=${JSON.stringify(scratch)}`,
    ];
    const reward = 'tool-efficiency:{"mode":"ppo"}';
    const { groups, scoresOf } = await train('otc-po', reward, [0, 1], set, { recipe: 'recipes/search-agent.ts' });
    const scored = { rightWithoutCalls: 0, rightAfterCalls: 0 };
    for (const group of groups) {
      // m = the episode's tool calls; right = the recipe's own check (its answer, not an <answer> tag).
      const example = { prompt: '', answer: group.answer };
      const right = await Promise.all(
        group.completions.map(async (completion) => await searchAgent.task.isCorrect(example, completion.text)),
      );
      scoresOf(group).forEach((score, index) => {
        const calls = group.completions[index]!.episode!.toolCalls.length;
        expect(score).toBeCloseTo(right[index] ? toolCallReward(calls, 0) : 0, 6);
        if (right[index] && calls === 0) scored.rightWithoutCalls++;
        if (right[index] && calls > 0) scored.rightAfterCalls++;
      });
    }
    // Both kinds of right answer occurred, so the count changed some scores.
    expect(scored.rightWithoutCalls).toBeGreaterThan(0);
    expect(scored.rightAfterCalls).toBeGreaterThan(0);
  });
});
