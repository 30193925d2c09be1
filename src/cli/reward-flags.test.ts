/**
 * Rewards from the command line: `--reward NAME[:WEIGHT][:{json options}]` as one flag (bad JSON and
 * unknown names refused naming the flag), a recipe's rewards in `grpo train --data` (no --reward
 * needed), `grpo eval --recipe` and `grpo reward --recipe`. Trains and evaluates the TinyStories
 * checkpoint for a step; not here: what the rewards compute (src/rewards tests).
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runEvalCommand } from './eval-command.js';
import { runRewardCommand } from './reward-command.js';
import { dataFlagOverrides, rewardFlag, runTrainCommand } from './train-command.js';
import { tinyStoriesModel } from '../../test/helpers/fixtures.js';

const scratch = mkdtempSync(join(tmpdir(), 'grpo-reward-flags-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const rowsFile = join(scratch, 'rows.jsonl');
writeFileSync(
  rowsFile,
  Array.from({ length: 6 }, (_, i) =>
    JSON.stringify({ prompt: `Once upon a time there were ${i}`, answer: `${i}` }),
  ).join('\n'),
);
// A recipe with a code reward and nothing else: its reward stands in for --reward.
const recipeFile = join(scratch, 'recipe.mjs');
writeFileSync(
  recipeFile,
  `export default {
  config: {},
  rewards: [
    { name: 'long', reward: ({ completion }) => (completion.length > 3 ? 1 : 0), weight: 1 },
    { name: 'mentionsAnswer', reward: ({ completion, row }) => (completion.includes(row.answer) ? 1 : 0), weight: 0.5 },
  ],
};
`,
);
const short = [
  'grpo.steps=1',
  'grpo.promptsPerStep=2',
  'sampling.groupSize=2',
  'grpo.microBatchSize=4',
  'sampling.maxNewTokens=4',
  'evaluation.examples=1',
  'checkpoint.every=0',
  `logging.runsDirectory=${JSON.stringify(scratch)}`,
];

describe('--reward NAME[:WEIGHT][:{json options}]', () => {
  it.each([
    // [flag, entry]
    ['math-answer', { name: 'math-answer', weight: 1 }],
    ['math-answer:0.5', { name: 'math-answer', weight: 0.5 }],
    ['regex:{"pattern":"^a:b"}', { name: 'regex', weight: 1, options: { pattern: '^a:b' } }], // a colon inside the JSON
    ['regex:-1e-2:{"pattern":"x"}', { name: 'regex', weight: -0.01, options: { pattern: 'x' } }],
  ])('reads %s', (flag, entry) => {
    expect(rewardFlag(flag)).toEqual(entry);
  });

  it('puts the options where the config takes them: rewards[], or taskOptions.rewards[] with --data', () => {
    const flag = 'regex:2:{"pattern":"^A"}';
    expect(dataFlagOverrides({ rewards: [flag] }).rewards).toEqual([
      { name: 'regex', weight: 2, options: { pattern: '^A' } },
    ]);
    const withData = dataFlagOverrides({ data: rowsFile, rewards: [flag] }).taskOptions as Record<string, unknown>;
    expect(withData.rewards).toEqual([{ name: 'regex', weight: 2, options: { pattern: '^A' } }]);
  });

  it.each([
    // [flag, the error]
    ['regex:1:{pattern:1}', /^--reward regex:1:\{pattern:1\}: the options are not valid JSON/],
    ['regex:[1]', /^--reward regex:\[1\]: expected NAME, NAME:WEIGHT or NAME:WEIGHT:\{json options\}/],
    ['regex:1:"x"', /^--reward regex:1:"x": expected NAME/], // options must be an object
    ['regex:{"a":1}]', /^--reward .*: the options are not valid JSON/],
  ])('refuses %s naming the flag', (flag, message) => {
    expect(() => rewardFlag(flag)).toThrow(message);
  });

  it('refuses an unknown reward name naming the flag, with the nearest known one', async () => {
    expect(() => dataFlagOverrides({ data: rowsFile, rewards: ['math-anwser'] })).toThrow(
      /^--reward math-anwser: unknown reward "math-anwser" \(did you mean "math-answer"\?\); known: /,
    );
    // Without --data a task's own rewards count as known ("format" is the addition task's).
    await expect(runTrainCommand({ set: short, quiet: true, data: { rewards: ['formt'] } })).rejects.toThrow(
      /^--reward formt: unknown reward "formt" \(did you mean "format"\?\)/,
    );
  });
});

describe("a recipe's rewards on the command line", () => {
  it('grpo train --data needs no --reward when the recipe exports rewards (and does without one)', async () => {
    await expect(runTrainCommand({ set: short, quiet: true, data: { data: rowsFile } })).rejects.toThrow(
      /--data: name the rewards/,
    );
    const code = await runTrainCommand({
      recipe: recipeFile,
      set: short,
      runName: 'recipe-rewards',
      quiet: true,
      data: { model: tinyStoriesModel, data: rowsFile },
    });
    expect(code).toBe(0);
    const [samples] = readFileSync(join(scratch, 'recipe-rewards', 'samples.jsonl'), 'utf8')
      .trim()
      .split('\n');
    expect(Object.keys(JSON.parse(samples!).completions[0].rewards).sort()).toEqual(['long', 'mentionsAnswer']);
  });

  it("grpo eval --recipe scores with the recipe's rewards", async () => {
    const output = join(scratch, 'eval.jsonl');
    const evalOptions = {
      model: tinyStoriesModel,
      data: rowsFile,
      examples: 2,
      passAtK: 0,
      maxNewTokens: 4,
      seed: 0,
      output,
    };
    const withRecipe = await runEvalCommand({ ...evalOptions, recipe: recipeFile, json: true });
    expect(withRecipe).toBe(0);
    const records = readFileSync(output, 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    // The reward is long + 0.5 × mentionsAnswer, so it is one of 0, 0.5, 1 and 1.5: not math-answer's 0/1 alone.
    for (const record of records) expect([0, 0.5, 1, 1.5]).toContain(record.reward);
    await expect(runEvalCommand(evalOptions)).rejects.toThrow(/--data: name the rewards/);
  });

  it('grpo reward --recipe scores every recipe reward (or the one named), and refuses a name it lacks', async () => {
    const input = join(scratch, 'completions.jsonl');
    writeFileSync(input, '{"completion": "there were 3 cats", "answer": "3"}\n{"completion": "no", "answer": "4"}\n');
    const run = async (name?: string) => {
      const stdout: string[] = [];
      const stderr: string[] = [];
      const code = await runRewardCommand(
        { name, input, recipe: recipeFile },
        { stdout: (line) => stdout.push(line), stderr: (line) => stderr.push(line) },
      );
      return { code, rows: stdout.map((line) => JSON.parse(line)), stderr: stderr.join('\n') };
    };
    expect((await run()).rows).toEqual([
      { line: 1, score: 1.5, scores: { long: 1, mentionsAnswer: 1 } }, // 1 + 0.5 × 1
      { line: 2, score: 0, scores: { long: 0, mentionsAnswer: 0 } },
    ]);
    expect((await run('mentionsAnswer')).rows).toEqual([
      { line: 1, score: 1 },
      { line: 2, score: 0 },
    ]);
    const missing = await run('nope');
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/--recipe .*recipe\.mjs has no reward "nope"; its rewards: long, mentionsAnswer/);
  });
});
