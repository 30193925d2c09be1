/**
 * LoRA from the command line on the real TinyStories checkpoint: `grpo score --adapter` equals the
 * plain-torch reference (scripts/reference/lora_reference.py, its output committed under
 * test/fixtures/lora-tinystories) within 1e-4; `grpo train --lora-rank 4` runs GRPO and its final
 * checkpoint is a PEFT adapter that changes only the adapted linears; `grpo merge` writes a
 * checkpoint that scores as base + adapter within 1e-5; `grpo generate --adapter` samples.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadCheckpoint } from '../model/checkpoint.js';
import { buildProgram } from './main.js';
import { runGenerateCommand, runMergeCommand, runScoreCommand } from './model-commands.js';
import { maxDifference } from '../../test/helpers/numeric.js';
import { tinyStoriesAdapter, tinyStoriesModel } from '../../test/helpers/fixtures.js';

const scratch = mkdtempSync(join(tmpdir(), 'grpo-lora-cli-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

function scoreJson(options: { model: string; adapter?: string; ids: number[] }): { logprobs: (number | null)[] } {
  const lines: string[] = [];
  runScoreCommand({ ...options, ids: options.ids.join(','), json: true }, (line) => lines.push(line));
  return JSON.parse(lines[0]);
}
/** Over the scored positions: the first token has no logprob (null). */
const logprobDifference = (a: (number | null)[], b: (number | null)[]) =>
  maxDifference(a.slice(1) as number[], b.slice(1) as number[]);

describe('LoRA commands', () => {
  it('grpo score --adapter equals the PyTorch reference within 1e-4 (and the adapter matters)', () => {
    const reference = JSON.parse(readFileSync(join(tinyStoriesAdapter, 'reference.json'), 'utf8'));
    const ours = scoreJson({ model: tinyStoriesModel, adapter: tinyStoriesAdapter, ids: reference.input_ids });
    const expected = [null, ...reference.next_token_logprob];
    expect(logprobDifference(ours.logprobs, expected)).toBeLessThan(1e-4);
    const moved = logprobDifference(expected, [null, ...reference.base_next_token_logprob]);
    expect(moved).toBeGreaterThan(1e-2); // far above the tolerance: the test would see a dropped adapter
  });

  it('grpo train --lora-rank 4 trains an adapter; merge equals the adapter path within 1e-5', async () => {
    const rows = join(scratch, 'rows.jsonl');
    writeFileSync(
      rows,
      Array.from({ length: 12 }, (_, i) =>
        JSON.stringify({ question: `Tom had ${i} apples.`, answer: String(i) }),
      ).join('\n'),
    );
    const settings = [
      'grpo.steps=2',
      'grpo.promptsPerStep=2',
      'sampling.groupSize=4',
      'grpo.microBatchSize=8',
      'sampling.maxNewTokens=6',
      'evaluation.examples=2',
      'checkpoint.every=0',
      'algorithm.klCoefficient=0.05',
      'lora.learningRate=0.01',
      // A reward that varies within a group (TinyStories never gets the math right), so the adapters learn.
      `rewards=${JSON.stringify([{ name: 'regex', options: { pattern: 'a' } }])}`,
      `logging.runsDirectory=${JSON.stringify(scratch)}`,
    ].flatMap((setting) => ['--set', setting]);
    process.exitCode = 0;
    await buildProgram().parseAsync([
      'node',
      'grpo',
      'train',
      '--lora-rank',
      '4',
      '--model',
      tinyStoriesModel,
      '--data',
      rows,
      '--prompt-column',
      'question',
      '--reward',
      'math-answer',
      '--run-name',
      'lora',
      '--quiet',
      ...settings,
    ]);
    expect(process.exitCode).toBe(0);
    const adapter = join(scratch, 'lora', 'checkpoints', 'step-2');
    const adapterConfig = JSON.parse(readFileSync(join(adapter, 'adapter_config.json'), 'utf8'));
    expect(adapterConfig).toMatchObject({ peft_type: 'LORA', r: 4, base_model_name_or_path: tinyStoriesModel });
    expect(adapterConfig.target_modules).toHaveLength(7);

    const merged = join(scratch, 'merged');
    runMergeCommand({ model: tinyStoriesModel, adapter, out: merged }, () => {});
    const [base, after] = [loadCheckpoint(tinyStoriesModel).tensors, loadCheckpoint(merged).tensors];
    for (const [name, tensor] of base) {
      const adapted = /_proj\.weight$/.test(name);
      expect(after.get(name)!.data.some((value, i) => value !== tensor.data[i])).toBe(adapted);
    }
    const ids = [1, 430, 256, 1012, 13, 77, 290, 5, 611, 42, 9, 1800];
    const viaAdapter = scoreJson({ model: tinyStoriesModel, adapter, ids }).logprobs;
    expect(logprobDifference(viaAdapter, scoreJson({ model: merged, ids }).logprobs)).toBeLessThan(1e-5);
    expect(logprobDifference(viaAdapter, scoreJson({ model: tinyStoriesModel, ids }).logprobs)).toBeGreaterThan(0);

    const lines: string[] = [];
    const sampling = { maxNewTokens: 5, temperature: 1, topP: 1, topK: 0, seed: 3, numSamples: 2, json: true };
    runGenerateCommand({ model: tinyStoriesModel, adapter, prompt: 'Once upon a time', ...sampling }, (line) =>
      lines.push(line),
    );
    expect(lines.map((line) => JSON.parse(line).ids.length)).toEqual([5, 5]);
  });
});
