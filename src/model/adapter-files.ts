/**
 * LoRA adapters on disk in PEFT's format, so `PeftModel.from_pretrained(base, dir)` loads what the
 * trainer writes and the trainer loads what PEFT writes: adapter_config.json (peft_type LORA, r,
 * lora_alpha, target_modules, use_rslora, ...) and adapter_model.safetensors with PEFT's names
 * (base_model.model.model.layers.N.self_attn.q_proj.lora_A.weight [r, in], ...lora_B.weight [out, r]).
 *
 * Is not: the adapter maths (lora.ts) or a reader of PEFT's other adapter types (only LORA without
 * bias, DoRA, per-module ranks or fan_in_fan_out, each refused by name).
 */
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { ModelConfig } from './config.js';
import { writeFileDurably } from './durable-files.js';
import { readJsonObject } from './json-file.js';
import { LoraAdapters, resolveTargetModules, type LoraSettings } from './lora.js';
import { encodeSafetensors, readSafetensors } from './safetensors.js';

export const ADAPTER_CONFIG_FILE = 'adapter_config.json';
export const ADAPTER_WEIGHTS_FILE = 'adapter_model.safetensors';

/**
 * Writes adapter_config.json and adapter_model.safetensors into an existing folder, each fsynced.
 * `dropout` is the training run's lora_dropout, recorded as PEFT records it (inference ignores it).
 */
export function writeAdapterFiles(folder: string, adapters: LoraAdapters, baseModel: string | null, dropout = 0): void {
  const { settings } = adapters;
  const adapterConfig = {
    peft_type: 'LORA',
    task_type: 'CAUSAL_LM',
    base_model_name_or_path: baseModel,
    r: settings.rank,
    lora_alpha: settings.alpha,
    lora_dropout: dropout,
    target_modules: settings.targetModules,
    use_rslora: settings.rsLora,
    use_dora: false,
    bias: 'none',
    fan_in_fan_out: false,
    inference_mode: true,
    modules_to_save: null,
  };
  writeFileDurably(join(folder, ADAPTER_CONFIG_FILE), `${JSON.stringify(adapterConfig, null, 2)}\n`);
  // PEFT's own files carry format "pt" like transformers' checkpoints.
  writeFileDurably(
    join(folder, ADAPTER_WEIGHTS_FILE),
    encodeSafetensors(adapters.toStoredTensors(), { dtype: 'F32', metadata: { format: 'pt' } }),
  );
}

/** The settings an adapter_config.json describes, refusing what this trainer cannot apply (naming the field). */
export function readAdapterSettings(directory: string): { settings: LoraSettings; baseModel: string | null } {
  const file = join(resolve(directory), ADAPTER_CONFIG_FILE);
  if (!existsSync(file)) throw new Error(`${file}: missing (an adapter folder needs adapter_config.json)`);
  const raw = readJsonObject(file);
  const refuse = (field: string, why: string): never => {
    throw new Error(`${file}: field "${field}" ${why}`);
  };
  if (raw.peft_type !== 'LORA') refuse('peft_type', `is ${JSON.stringify(raw.peft_type)}; only LORA adapters load`);
  if (!Number.isInteger(raw.r) || (raw.r as number) < 1) refuse('r', 'must be a positive integer');
  if (typeof raw.lora_alpha !== 'number') refuse('lora_alpha', 'must be a number');
  if ((raw.bias ?? 'none') !== 'none') refuse('bias', `is ${JSON.stringify(raw.bias)}; only "none" is supported`);
  if (raw.fan_in_fan_out === true) refuse('fan_in_fan_out', 'is true; only [out, in] weights are supported');
  if (raw.use_dora === true) refuse('use_dora', 'is true; DoRA adapters are not supported');
  for (const field of ['rank_pattern', 'alpha_pattern'])
    if (raw[field] && Object.keys(raw[field] as object).length > 0)
      refuse(field, 'is set; per-module ranks and alphas are not supported');
  if (raw.modules_to_save) refuse('modules_to_save', 'is set; only adapter weights are supported');
  const targets = raw.target_modules;
  const targetModules =
    targets === 'all-linear'
      ? resolveTargetModules('all-linear')
      : Array.isArray(targets)
        ? resolveTargetModules(targets as string[])
        : refuse('target_modules', 'must be "all-linear" or a list of module names');
  return {
    settings: {
      rank: raw.r as number,
      alpha: raw.lora_alpha as number,
      targetModules,
      rsLora: raw.use_rslora === true,
    },
    baseModel: typeof raw.base_model_name_or_path === 'string' ? raw.base_model_name_or_path : null,
  };
}

/** Loads an adapter folder for a model of `config`; every tensor is checked by name and shape. */
export function loadAdapter(directory: string, config: ModelConfig): LoraAdapters {
  const { settings } = readAdapterSettings(directory);
  const weights = join(resolve(directory), ADAPTER_WEIGHTS_FILE);
  if (!existsSync(weights)) throw new Error(`${weights}: missing (an adapter folder needs ${ADAPTER_WEIGHTS_FILE})`);
  const adapters = LoraAdapters.create(config, settings, 0);
  const tensors = readSafetensors(weights);
  adapters.load(tensors, weights);
  const expected = new Set(adapters.namedParameters().map(([name]) => name));
  const unexpected = [...tensors.keys()].filter((name) => !expected.has(name));
  if (unexpected.length > 0)
    throw new Error(
      `${weights}: ${unexpected.length} tensor(s) the adapter config does not describe, e.g. "${unexpected[0]}"`,
    );
  return adapters;
}
