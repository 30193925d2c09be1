/**
 * LoRA runs end to end: SFT then GRPO with KL in the loss trains only the adapters (the base weights
 * are bit-identical afterwards, AdamW holds state for A and B only), checkpoints hold PEFT adapter
 * files instead of model weights, the KL reference (the policy with adapters off) scores exactly as
 * a separately built base model, and a run stopped after a checkpoint and resumed ends with the same
 * adapter and metrics as one left alone (with LoRA dropout on: its masks come from the seed and step).
 * A BF16 checkpoint's base stays bfloat16 under baseDtype
 * 'auto' and scores exactly as its float32 load.
 */
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadCheckpoint } from '../model/checkpoint.js';
import { Transformer } from '../model/transformer.js';
import { encodeSafetensors, readSafetensors } from '../model/safetensors.js';
import { createRunContext, resolveConfig, singleTurnRollout, train, type RolloutFn } from './index.js';
import { frozenLogprobs } from './optimize.js';
import { attachLora } from './setup.js';
import { tinyStoriesModel } from '../../test/helpers/fixtures.js';

const scratch = mkdtempSync(join(tmpdir(), 'grpo-lora-run-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const config = resolveConfig({
  model: { hiddenSize: 16, numLayers: 1, numHeads: 2, initSeed: 4 },
  sft: { steps: 1, batchSize: 4 },
  grpo: { steps: 3, promptsPerStep: 4, microBatchSize: 8 },
  sampling: { groupSize: 4, maxNewTokens: 4 },
  evaluation: { examples: 8 },
  checkpoint: { every: 1, keepLast: 10 },
  algorithm: { klCoefficient: 0.1, klPlacement: 'loss' },
  // Dropout on, so the resume test also shows that masks come from the seed and step, not RNG state.
  lora: { rank: 4, alpha: 8, learningRate: 0.05, dropout: 0.1 },
});

const metrics = (run: string) =>
  readFileSync(join(run, 'metrics.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((line) => {
      const record = JSON.parse(line) as Record<string, unknown>;
      return Object.fromEntries(Object.entries(record).filter(([key]) => !/^time\/|^tokensPerSecond$/.test(key)));
    });
const adapterBytes = (run: string, step: number) =>
  readFileSync(join(run, 'checkpoints', `step-${step}`, 'adapter_model.safetensors'));

describe('a LoRA run', () => {
  const whole = join(scratch, 'whole');

  it('trains only the adapters and checkpoints them in PEFT format', async () => {
    const context = createRunContext(config);
    const baseBefore = new Map([...context.model.parameters].map(([name, p]) => [name, p.data.slice()]));
    await train(context, { runDirectory: whole, quiet: true });
    expect(context.model.adapterDropout).toBe(0.1);
    for (const [name, parameter] of context.model.parameters) expect(parameter.data).toEqual(baseBefore.get(name));
    const changed = [...context.model.adapters!.pairs.values()].filter(({ b }) => b.data.some((v) => v !== 0));
    expect(changed.length).toBe(context.model.adapters!.pairs.size);

    const last = join(whole, 'checkpoints', 'step-4');
    expect(existsSync(join(last, 'adapter_config.json'))).toBe(true);
    expect(existsSync(join(last, 'model.safetensors'))).toBe(false);
    expect(existsSync(join(whole, 'checkpoints', 'reference'))).toBe(false); // no second copy of the weights
    // A from-scratch base is saved once, and the adapter names it: base + adapter is the trained policy.
    const baseFolder = join(whole, 'checkpoints', 'base');
    const adapterConfig = JSON.parse(readFileSync(join(last, 'adapter_config.json'), 'utf8'));
    expect(adapterConfig.base_model_name_or_path).toBe(baseFolder);
    expect(adapterConfig.lora_dropout).toBe(0.1); // the run's dropout, recorded as PEFT records it
    const reloaded = Transformer.fromTensors(context.model.config, loadCheckpoint(baseFolder).tensors);
    for (const [name, parameter] of reloaded.parameters) expect(parameter.data).toEqual(baseBefore.get(name));
    const optimizerNames = [...readSafetensors(join(last, 'training-state', 'optimizer.safetensors')).keys()];
    expect(optimizerNames.length).toBe(2 * 2 * 7); // first and second moments of A and B of 7 linears
    expect(optimizerNames.every((name) => /\.lora_[AB]\.weight$/.test(name))).toBe(true);
    const saved = readSafetensors(join(last, 'adapter_model.safetensors'));
    for (const [name, parameter] of context.model.adapters!.namedParameters())
      expect(saved.get(name)!.data).toEqual(parameter.data);
  });

  it('uses as KL reference the policy with adapters off, which scores exactly as a separately built base', async () => {
    const context = createRunContext(config);
    for (const { b } of context.model.adapters!.pairs.values()) b.data.fill(0.05); // a trained-looking adapter
    const separateBase = Transformer.random(context.model.config, config.model.initSeed);
    const samples = [
      { promptIds: [1, 4, 5], completionIds: [6, 7, 2] },
      { promptIds: [1, 3], completionIds: [8, 9, 10, 2] },
    ];
    const settings = { microBatchSize: 2, temperature: 1 };
    const [policy, adaptersOff, base] = [context.model, context.model.withoutAdapters(), separateBase].map((model) =>
      frozenLogprobs(model, samples, settings),
    );
    expect(adaptersOff).toEqual(base);
    expect(policy).not.toEqual(base);
    // k3 KL(policy ‖ reference) per sequence is then the same number whichever reference is used.
    const k3 = (reference: Float32Array[]) =>
      policy.map((row, i) =>
        row.reduce((total, lp, t) => total + Math.exp(reference[i][t] - lp) - (reference[i][t] - lp) - 1, 0),
      );
    expect(k3(adaptersOff)).toEqual(k3(base));
    expect(k3(base)[0]).toBeGreaterThan(0);
  });

  it("keeps a BF16 checkpoint's frozen linears in bfloat16 under baseDtype 'auto', scoring as the float32 load", () => {
    const fixture = tinyStoriesModel;
    const folder = join(scratch, 'bf16-checkpoint');
    mkdirSync(folder);
    copyFileSync(join(fixture, 'config.json'), join(folder, 'config.json'));
    const bf16 = encodeSafetensors(loadCheckpoint(fixture).tensors, { dtype: 'BF16' });
    writeFileSync(join(folder, 'model.safetensors'), bf16);
    const lora = resolveConfig({ lora: { rank: 4 } }).lora!;
    const attached = (directory: string, baseDtype: 'auto' | 'float32') => {
      const checkpoint = loadCheckpoint(directory);
      const model = Transformer.fromTensors(checkpoint.config, checkpoint.tensors);
      attachLora(model, { ...lora, baseDtype }, 3, checkpoint.files);
      for (const { b } of model.adapters!.pairs.values()) b.data.fill(0.01);
      return model;
    };
    const [kept, widened, float32Fixture] = [
      attached(folder, 'auto'),
      attached(folder, 'float32'),
      attached(fixture, 'auto'),
    ];
    expect(kept.halfWeights.size).toBe(7 * kept.config.numLayers);
    expect(widened.halfWeights.size).toBe(0);
    expect(float32Fixture.halfWeights.size).toBe(0); // an F32 checkpoint is never rounded under 'auto'
    const samples = [{ promptIds: [1, 40, 52], completionIds: [61, 7, 200, 2] }];
    const settings = { microBatchSize: 1, temperature: 1 };
    expect(frozenLogprobs(kept, samples, settings)).toEqual(frozenLogprobs(widened, samples, settings));
  });

  it('refuses dropout of 1 or more and unknown target modules before any compute, naming the field', () => {
    expect(resolveConfig({ lora: { dropout: 0.1 } }).lora?.dropout).toBe(0.1);
    expect(() => resolveConfig({ lora: { dropout: 1 } })).toThrow(/lora\.dropout: must be below 1/);
    expect(() => resolveConfig({ lora: { targetModules: ['q_proj', 'lm_head'] } })).toThrow(
      /lora\.targetModules: unknown module "lm_head"/,
    );
  });

  it('resumed after a stop at a checkpoint, ends with the same adapter and metrics as the run left alone', async () => {
    const broken = join(scratch, 'broken');
    let calls = 0;
    const failsOnSecondStep: RolloutFn = async (context, prompts, settings) => {
      if (++calls === 2) throw new Error('rollout engine went away');
      return singleTurnRollout(context, prompts, settings);
    };
    await expect(
      train(createRunContext(config), { runDirectory: broken, quiet: true, rollout: failsOnSecondStep }),
    ).rejects.toThrow(/went away/);
    expect(existsSync(join(broken, 'checkpoints', 'step-2', 'adapter_model.safetensors'))).toBe(true);
    expect(existsSync(join(broken, 'checkpoints', 'step-3'))).toBe(false);

    // Resuming with the other setting is refused before anything changes.
    const fullConfig = { ...config, lora: null };
    await expect(
      train(createRunContext(fullConfig), { runDirectory: broken, quiet: true, resume: true }),
    ).rejects.toThrow(/holds a LoRA adapter but the config has lora null/);
    await train(createRunContext(config), { runDirectory: broken, quiet: true, resume: true });
    expect(metrics(broken)).toEqual(metrics(whole));
    expect(adapterBytes(broken, 4).equals(adapterBytes(whole, 4))).toBe(true);
    const optimizer = (run: string) =>
      readFileSync(join(run, 'checkpoints', 'step-4', 'training-state', 'optimizer.safetensors'));
    expect(optimizer(broken).equals(optimizer(whole))).toBe(true);
  });
});
