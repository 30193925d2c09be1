/**
 * Reason-RFT's recipe (#8, recipes/papers/reason-rft.ts): the clevr-math rewards as the authors'
 * train/stage_rl/reward.py (`accuracy_reward`, `format_reward`), the prompts and CoT demonstrations,
 * and SFT then GRPO through `grpo train` at a tiny size.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { reasonRftAccuracy, reasonRftCountingTask, reasonRftFormat } from '../../recipes/papers/reason-rft.js';
import { runTrainCommand } from './train-command.js';

const scratch = mkdtempSync(join(tmpdir(), 'grpo-reason-rft-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe('Reason-RFT rewards', () => {
  it('accuracy_reward: the first <answer> (one line), else the whole completion, equal to the answer', () => {
    expect(reasonRftAccuracy('<think>two red squares</think><answer>2</answer>', '2')).toBe(1);
    expect(reasonRftAccuracy('<answer> 2 </answer>', '2')).toBe(1);
    expect(reasonRftAccuracy('<answer>3</answer><answer>2</answer>', '2')).toBe(0); // the first answer counts
    expect(reasonRftAccuracy('<answer>2</answer>', '<answer>2</answer>')).toBe(1); // a tagged solution
    expect(reasonRftAccuracy(' 2 ', '2')).toBe(1); // no tag: the whole completion, stripped
  });

  it('accuracy_reward: Math-Verify only for a completion without an answer tag', () => {
    expect(reasonRftAccuracy('so the count is 2', '2')).toBe(1); // untagged: symbolic check of the completion
    expect(reasonRftAccuracy('<answer>2.0</answer>', '2')).toBe(0); // tagged: string match only
    expect(reasonRftAccuracy('so the count is 3', '2')).toBe(0);
  });

  it('format_reward: the whole completion is <think>…</think> then <answer>…</answer>', () => {
    expect(reasonRftFormat('<think>1</think><answer>1</answer>')).toBe(1);
    expect(reasonRftFormat('<think>a\nb</think>\n <answer>\n1</answer>')).toBe(1); // DOTALL, \s* between
    expect(reasonRftFormat('<answer>1</answer>')).toBe(0);
    expect(reasonRftFormat('<think>1</think><answer>1</answer>.')).toBe(0); // fullmatch
    expect(reasonRftFormat(' <think>1</think><answer>1</answer>')).toBe(0);
  });

  it('rows carry the clevr-math instruction; demonstrations think then answer', () => {
    const [row] = reasonRftCountingTask.trainExamples(1, 1);
    expect(row.prompt).toMatch(/<image> Output the thinking process in <think> <\/think> and final answer \(number\)/);
    const demonstration = reasonRftCountingTask.demonstration(row, () => 0.99);
    expect(demonstration).toBe(`<think>${row.answer}</think><answer>${row.answer}</answer>`);
    expect(reasonRftCountingTask.isCorrect(row, demonstration)).toBe(true);
  });

  it('trains through grpo train: SFT on the CoT demonstrations, then GRPO on accuracy + format', async () => {
    const set = [
      'sft.steps=2',
      'sft.batchSize=4',
      'grpo.steps=2',
      'grpo.promptsPerStep=2',
      'grpo.microBatchSize=16',
      'evaluation.examples=2',
      'evaluation.every=0',
      `logging.runsDirectory=${JSON.stringify(scratch)}`,
    ];
    expect(await runTrainCommand({ recipe: 'recipes/papers/reason-rft.ts', set, runName: 'rft', quiet: true })).toBe(0);
    const run = join(scratch, 'rft');
    expect(JSON.parse(readFileSync(join(run, 'summary.json'), 'utf8')).status).toBe('finished');
    const config = JSON.parse(readFileSync(join(run, 'config.json'), 'utf8'));
    expect(config).toMatchObject({
      task: 'reason-rft-counting',
      sampling: { groupSize: 8 },
      algorithm: { klCoefficient: 0.04, aggregation: 'seq-mean-token-mean', advantageOptions: { epsilon: 1e-4 } },
    });
    const lines = readFileSync(join(run, 'metrics.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    const steps = lines.filter((line) => 'reward/accuracy/mean' in line && 'reward/format/mean' in line);
    expect(steps.length).toBe(2);
  }, 180_000);
});
