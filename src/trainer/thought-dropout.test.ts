/**
 * TON's thought dropout (`sft.thoughtDropout`): the transform replaces a demonstration's reasoning by the
 * empty thought with the given probability, and the SFT loop applies it — a run with dropout 1 trains on
 * other tokens than one with dropout 0 (its SFT losses differ), while dropout 0 leaves a run as it was.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { Task } from '../data/index.js';
import { dropThought, emptyThought } from '../data/thought-dropout.js';
import { Random } from '../nn/index.js';
import { createRunContext, resolveConfig } from './setup.js';
import { train } from './trainer.js';

const scratch = mkdtempSync(join(tmpdir(), 'grpo-thought-dropout-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe('dropThought', () => {
  it('replaces the think content with the empty thought at the given rate, and nothing else', () => {
    const text = 'so <think>2 + 2 = 4</think>4 <think>again</think>';
    expect(dropThought(text, 1, () => 0.99)).toBe(`so ${emptyThought}4 <think>again</think>`);
    expect(dropThought(text, 0.5, () => 0.5)).toBe(text); // draw ≥ p keeps it
    expect(dropThought(text, 0.5, () => 0.49)).toBe(`so ${emptyThought}4 <think>again</think>`);
    let draws = 0;
    expect(dropThought('4', 1, () => (draws++, 0))).toBe('4'); // no think block: no draw either
    expect(dropThought(text, 0, () => (draws++, 0))).toBe(text);
    expect(draws).toBe(0);
    const random = new Random(3);
    const dropped = Array.from({ length: 2000 }, () => dropThought(text, 0.3, () => random.uniform()) !== text);
    expect(dropped.filter(Boolean).length / 2000).toBeCloseTo(0.3, 1);
  });
});

const thinkTask: Task = {
  name: 'think',
  description: 'answer r after a short thought',
  alphabet: '<>/thinkabcr?\n',
  trainExamples: (count) => Array.from({ length: count }, () => ({ prompt: '?', answer: 'r' })),
  evalExamples: (count) => Array.from({ length: count }, () => ({ prompt: '?', answer: 'r' })),
  demonstration: () => '<think>abcabc</think>r',
  rewards: () => [{ name: 'correct', reward: ({ completion }) => (completion.endsWith('r') ? 1 : 0), weight: 1 }],
  isCorrect: (_, completion) => completion.endsWith('r'),
};

async function sftLosses(thoughtDropout: number | undefined, name: string): Promise<number[]> {
  const config = {
    task: 'think',
    seed: 1,
    model: { hiddenSize: 16, numLayers: 1, numHeads: 2 },
    sft: { steps: 2, batchSize: 4, ...(thoughtDropout === undefined ? {} : { thoughtDropout }) },
    grpo: { steps: 0 },
    evaluation: { examples: 2 },
    checkpoint: { every: 0 },
  };
  const context = createRunContext(resolveConfig(config, ['think'], thinkTask), { task: thinkTask });
  await train(context, { runDirectory: join(scratch, name), quiet: true });
  return readFileSync(join(scratch, name, 'metrics.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line))
    .filter((line) => line.phase === 'sft')
    .map((line) => line['loss/sft'] as number);
}

describe('sft.thoughtDropout in a run', () => {
  it('changes what SFT trains on when on, and nothing when 0', async () => {
    const off = await sftLosses(undefined, 'off');
    expect(off).toHaveLength(2);
    expect(off.every(Number.isFinite)).toBe(true);
    expect(await sftLosses(0, 'zero')).toEqual(off);
    const on = await sftLosses(1, 'on');
    expect(on[0]).not.toBeCloseTo(off[0]!, 3);
    expect(() => resolveConfig({ task: 'think', sft: { thoughtDropout: 1.5 } }, ['think'], thinkTask)).toThrow(
      /sft.thoughtDropout/,
    );
  });
});
