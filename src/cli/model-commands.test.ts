/**
 * `grpo generate` and `grpo score` on the real TinyStories checkpoint: JSON output carries ids, text
 * and logprobs consistent with the model (greedy = the reference continuation; score's logprobs equal
 * a forward pass), and bad input gets a clear error.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runGenerateCommand, runScoreCommand } from './model-commands.js';
import { tinyStoriesModel } from '../../test/helpers/fixtures.js';

const model = tinyStoriesModel;
const reference = JSON.parse(readFileSync(join(model, 'reference.json'), 'utf8'));

function capture(run: (write: (line: string) => void) => void): string[] {
  const lines: string[] = [];
  run((line) => lines.push(line));
  return lines;
}

describe('grpo generate', () => {
  it('greedy --json reproduces the reference continuation with ids, text and logprobs', () => {
    const prompt = reference.tokenizer.encodings[0].text as string;
    const [line] = capture((write) =>
      runGenerateCommand(
        { model, prompt, maxNewTokens: 20, temperature: 0, topP: 1, topK: 0, seed: 0, numSamples: 1, json: true },
        write,
      ),
    );
    const output = JSON.parse(line);
    expect([...output.promptIds, ...output.ids]).toEqual(
      reference.greedy.output_ids.slice(0, reference.greedy.prompt_ids.length + 20),
    );
    expect(output.logprobs).toHaveLength(20);
    expect(output.logprobs.every((value: number) => value <= 0)).toBe(true);
    expect(typeof output.text).toBe('string');
    expect(output.text.length).toBeGreaterThan(10);
  });
  it('--num-samples gives that many seeded samples, reproducibly', () => {
    const options = {
      model,
      prompt: 'The cat',
      maxNewTokens: 8,
      temperature: 1,
      topP: 0.9,
      topK: 0,
      seed: 3,
      numSamples: 3,
      json: true,
    };
    const first = capture((write) => runGenerateCommand(options, write));
    expect(first).toHaveLength(3);
    expect(capture((write) => runGenerateCommand(options, write))).toEqual(first);
  });
});

describe('grpo score', () => {
  it('prints per-token logprobs, mean NLL and perplexity that match the reference', () => {
    const ids = reference.forward.input_ids as number[];
    const [line] = capture((write) => runScoreCommand({ model, ids: ids.join(','), json: true }, write));
    const output = JSON.parse(line);
    expect(output.logprobs[0]).toBeNull();
    reference.forward.next_token_logprob.forEach((value: number, i: number) =>
      expect(Math.abs(output.logprobs[i + 1] - value)).toBeLessThan(1e-4),
    );
    const meanNll = -reference.forward.next_token_logprob.reduce((a: number, b: number) => a + b, 0) / (ids.length - 1);
    expect(output.meanNll).toBeCloseTo(meanNll, 4);
    expect(output.perplexity).toBeCloseTo(Math.exp(meanNll), 3);
  });
  it('explains bad input', () => {
    expect(() => runScoreCommand({ model, ids: '1,x' }, () => {})).toThrow(/--ids entry 1 \("x"\) is not an integer/);
    expect(() => runScoreCommand({ model }, () => {})).toThrow(/exactly one of --text or --ids/);
    expect(() => runScoreCommand({ model: '/nonexistent', text: 'a b' }, () => {})).toThrow(/\/nonexistent/);
    // Out of the vocabulary (was an internal logSoftmaxGather error) and past the 512 positions (was scored silently).
    expect(() => runScoreCommand({ model, ids: '1,99999' }, () => {})).toThrow(
      'grpo score: --ids entry 1 (99999) is outside the vocabulary [0, 2048)',
    );
    expect(() => runScoreCommand({ model, ids: Array(513).fill(5).join(',') }, () => {})).toThrow(
      "grpo score: --ids is 513 tokens, over the model's max_position_embeddings (512)",
    );
  });
});
