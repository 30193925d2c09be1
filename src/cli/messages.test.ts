/**
 * The messages a new user meets first, one test each: a missing data or model file names the flag
 * and field that named it (not Node's bare ENOENT), an adapter folder given as a model points to
 * --adapter, an unknown config key gets a "did you mean", TRL's names are mapped or explained, and a
 * run whose rewards all failed ends `failed` with exit code 1 however short it is.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { resolveConfig } from '../trainer/setup.js';
import { runEvalCommand } from './eval-command.js';
import { main } from './main.js';
import { runTrainCommand } from './train-command.js';
import { tinyStoriesModel } from '../../test/helpers/fixtures.js';

const scratch = mkdtempSync(join(tmpdir(), 'grpo-messages-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));
afterEach(() => {
  process.exitCode = undefined;
  vi.restoreAllMocks();
});

const rowsFile = join(scratch, 'rows.jsonl');
writeFileSync(
  rowsFile,
  '{"prompt": "a", "answer": "1"}\n{"prompt": "b", "answer": "2"}\n{"prompt": "c", "answer": "3"}\n',
);
const missing = join(scratch, 'missing.jsonl');
const evalDefaults = { examples: 1, passAtK: 0, maxNewTokens: 2, seed: 0 };

describe('missing files name the flag and the field', () => {
  it.each([
    // [data flags, the error]
    [{ data: missing, rewards: ['math-answer'] }, `- taskOptions.trainFile (--data): ${missing} does not exist`],
    [
      { data: rowsFile, evalData: missing, rewards: ['math-answer'] },
      `- taskOptions.evalFile (--eval-data): ${missing} does not exist`,
    ],
    [
      { model: join(scratch, 'no-model'), data: rowsFile, rewards: ['math-answer'] },
      `- model.checkpoint (--model): ${join(scratch, 'no-model')}: checkpoint folder does not exist`,
    ],
  ])('grpo train %j', async (data, message) => {
    const error = await runTrainCommand({ quiet: true, data }).catch((caught: Error) => caught);
    expect((error as Error).message).toContain(message);
    expect((error as Error).message).not.toMatch(/ENOENT/);
  });

  it('grpo train --chat-template', async () => {
    const template = join(scratch, 'missing.jinja');
    await expect(
      runTrainCommand({
        quiet: true,
        data: { model: tinyStoriesModel, data: rowsFile, rewards: ['math-answer'], chatTemplate: template },
      }),
    ).rejects.toThrow(`model.chatTemplate (--chat-template): ${template} does not exist`);
  });

  it('grpo eval --adapter', async () => {
    await expect(
      runEvalCommand({ ...evalDefaults, model: tinyStoriesModel, adapter: join(scratch, 'no-adapter') }),
    ).rejects.toThrow(/^--adapter: .*no-adapter\/adapter_config\.json: missing/);
  });

  it('grpo eval --model', async () => {
    await expect(runEvalCommand({ ...evalDefaults, model: join(scratch, 'no-model') })).rejects.toThrow(
      /^--model: .*no-model: checkpoint folder does not exist$/,
    );
  });
});

describe('an adapter folder given as the model', () => {
  it('suggests --adapter (and grpo merge)', async () => {
    const adapter = join(scratch, 'adapter');
    mkdirSync(adapter);
    writeFileSync(join(adapter, 'adapter_config.json'), '{"peft_type": "LORA", "r": 4}');
    await expect(runEvalCommand({ ...evalDefaults, model: adapter })).rejects.toThrow(
      /is a LoRA adapter folder \(adapter_config\.json, no config\.json\): give its base model as the model and this folder as --adapter/,
    );
    await expect(
      runTrainCommand({ quiet: true, data: { model: adapter, data: rowsFile, rewards: ['math-answer'] } }),
    ).rejects.toThrow(/model\.checkpoint \(--model\): .* is a LoRA adapter folder .*--adapter/);
  });
});

describe('config keys', () => {
  it.each([
    // [config, the line]
    [{ grpo: { stpes: 3 } }, '- grpo: Unrecognized key: "stpes" (did you mean "steps"?)'],
    [{ sampling: { groupSzie: 4 } }, '- sampling: Unrecognized key: "groupSzie" (did you mean "groupSize"?)'],
    [{ stpes: 3 }, '- (root): Unrecognized key: "stpes" (did you mean "sft.steps" or "grpo.steps"?)'], // one level down
    [{ grpo: { xyzzy: 1 } }, '- grpo: Unrecognized key: "xyzzy"'], // nothing near: no guess
  ])('%j: a near miss is suggested', (config, line) => {
    expect(() => resolveConfig(config)).toThrow(line);
  });

  it.each([
    // [TRL name, what the line says]
    ['report_to', "here it is logging.reportTo (['tensorboard'] writes TensorBoard event files"],
    ['push_to_hub', 'checkpoints are Hugging Face folders, upload one with `huggingface-cli upload'],
    ['use_vllm', "set rollout.engine 'openai' and rollout.baseUrl"],
    ['vllm_mode', "TRL's 'colocate' is the default local sampler"],
    ['repetition_penalty', 'the repetition-penalty reward'],
    ['num_train_epochs', 'here it is grpo.steps (steps, not epochs'],
    ['gradient_accumulation_steps', 'here it is grpo.microBatchSize'],
    ['multi_objective_aggregation', 'algorithm.advantage gdpo'],
  ])('%s is mapped to ours or explained', (name, text) => {
    expect(() => resolveConfig({ [name]: 1 })).toThrow(`- (root): "${name}" is TRL's name; `);
    expect(() => resolveConfig({ [name]: 1 })).toThrow(text);
  });
});

describe('a run whose rewards all failed', () => {
  it('ends failed with exit code 1, though it is shorter than the consecutive-step limit', async () => {
    const recipe = join(scratch, 'broken.mjs');
    writeFileSync(
      recipe,
      "export default { config: {}, rewards: [{ name: 'broken', reward: () => { throw new Error('no judge'); }, weight: 1 }] };\n",
    );
    const stderr = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    await main([
      ...['node', 'grpo', 'train', recipe, '--model', tinyStoriesModel, '--data', rowsFile, '--quiet'],
      ...['--run-name', 'broken', '--set', `logging.runsDirectory=${JSON.stringify(scratch)}`],
      ...['--set', 'grpo.steps=2', '--set', 'grpo.promptsPerStep=1', '--set', 'sampling.groupSize=2'],
      ...['--set', 'grpo.microBatchSize=2', '--set', 'sampling.maxNewTokens=2', '--set', 'evaluation.examples=1'],
      // Held-out correctness by a working reward: the broken one would fail the evaluation before GRPO.
      ...['--set', 'taskOptions.correctness={"name":"exact-match"}'],
    ]);
    expect(process.exitCode).toBe(1);
    expect(stderr.mock.calls.map(([text]) => String(text)).join('')).toContain(
      'none of the 2 GRPO steps had a sample with a valid reward',
    );
    expect(JSON.parse(readFileSync(join(scratch, 'broken', 'summary.json'), 'utf8')).status).toBe('failed');
  });
});
