/**
 * The two vision recipes run end to end through `grpo train` (shortened with --set):
 * recipes/vision-counting.ts (a from-scratch model, SFT then GRPO) and recipes/smolvlm.ts on an
 * idefics3 folder written here (random weights, a character tokenizer with SmolVLM's chat template,
 * which renders the rows' image content parts as `<image>`); and smolvlm.ts without a folder refuses
 * with a sentence saying what to set.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runTrainCommand } from '../cli/train-command.js';
import { CharTokenizer } from '../model/char-tokenizer.js';
import { createSmallConfig } from '../model/config.js';
import { createSmallVisionLanguageConfig } from '../model/vision/idefics3-config.js';
import { saveVisionLanguageCheckpoint } from '../model/vision/vision-language-checkpoint.js';
import { VisionLanguageModel } from '../model/vision/vision-language.js';

const scratch = mkdtempSync(join(tmpdir(), 'grpo-vision-recipes-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

// SmolVLM-Instruct's chat template (content parts: text as is, an image part as <image>).
const smolvlmTemplate =
  "<|im_start|>{% for message in messages %}{{message['role'] | capitalize}}{% if message['content'][0]['type'] == 'image' %}{{':'}}{% else %}{{': '}}{% endif %}{% for line in message['content'] %}{% if line['type'] == 'text' %}{{line['text']}}{% elif line['type'] == 'image' %}{{ '<image>' }}{% endif %}{% endfor %}<end_of_utterance>\n{% endfor %}{% if add_generation_prompt %}{{ 'Assistant:' }}{% endif %}";

/** A random idefics3 folder in SmolVLM's layout, 32-pixel tiles, processor settings as SmolVLM's (tiles on). */
function writeRandomSmolvlm(directory: string): void {
  const tokenizer = new CharTokenizer({
    extraSpecialTokens: ['<|im_start|>', '<end_of_utterance>', '<image>', '<fake_token_around_image>', '<global-img>'],
    chatTemplate: smolvlmTemplate,
  });
  const text = createSmallConfig({
    vocabSize: tokenizer.vocabSize,
    hiddenSize: 16,
    numLayers: 1,
    numHeads: 2,
    bosTokenId: tokenizer.bosTokenId,
    eosTokenIds: [tokenizer.encode('<end_of_utterance>', { addSpecialTokens: false })[0]],
  });
  const imageTokenId = tokenizer.encode('<image>', { addSpecialTokens: false })[0];
  const config = createSmallVisionLanguageConfig({ text, imageTokenId, hiddenSize: 8, numLayers: 1, numHeads: 2 });
  const model = VisionLanguageModel.random(config, 3);
  const processor = { do_image_splitting: true, size: { longest_edge: 64 }, max_image_size: { longest_edge: 32 } };
  saveVisionLanguageCheckpoint(directory, {
    config,
    tensors: model.toStoredTensors(),
    extraFiles: { ...tokenizer.toHfFiles(), 'preprocessor_config.json': JSON.stringify(processor) },
  });
}

const short = [
  'grpo.steps=1',
  'grpo.promptsPerStep=2',
  'grpo.microBatchSize=8',
  'sampling.groupSize=4',
  'evaluation.examples=2',
  'evaluation.every=0',
  `logging.runsDirectory=${JSON.stringify(scratch)}`,
];

describe('vision recipes', () => {
  it('vision-counting.ts runs SFT then GRPO on a from-scratch model', async () => {
    const set = [...short, 'sft.steps=2', 'sft.batchSize=4'];
    expect(await runTrainCommand({ recipe: 'recipes/vision-counting.ts', set, runName: 'counting', quiet: true })).toBe(
      0,
    );
    const summary = JSON.parse(readFileSync(join(scratch, 'counting', 'summary.json'), 'utf8'));
    expect(summary.status).toBe('finished');
    expect(summary.steps).toBe(3);
  });

  it('smolvlm.ts trains an idefics3 folder given by SMOLVLM_CHECKPOINT', async () => {
    const folder = join(scratch, 'smolvlm-random');
    writeRandomSmolvlm(folder);
    process.env.SMOLVLM_CHECKPOINT = folder;
    // Tiles stay on (the folder's setting) at 64 pixels: 4 tiles and the global image per prompt.
    const set = [
      ...short,
      'model.imageProcessor={"longestEdge":64,"doImageSplitting":true}',
      'sampling.maxNewTokens=3',
    ];
    expect(await runTrainCommand({ recipe: 'recipes/smolvlm.ts', set, runName: 'smolvlm', quiet: true })).toBe(0);
    const [sample] = readFileSync(join(scratch, 'smolvlm', 'samples.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(sample.prompt).toMatch(/^<\|im_start\|>User:<fake_token_around_image><row_1_col_1>/);
    expect(sample.images).toHaveLength(1);
  });

  it('smolvlm.ts without a folder says what to set', () => {
    const environment = { ...process.env };
    delete environment.SMOLVLM_CHECKPOINT;
    const run = spawnSync('npx', ['tsx', 'src/cli/bin.ts', 'train', 'recipes/smolvlm.ts'], {
      env: environment,
      encoding: 'utf8',
    });
    expect(run.status).not.toBe(0);
    expect(run.stderr).toMatch(/set SMOLVLM_CHECKPOINT to a SmolVLM \(idefics3\) checkpoint folder/);
  });
});
