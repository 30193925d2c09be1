/**
 * LoRA adapters on disk in PEFT's format, so `PeftModel.from_pretrained(base, dir)` loads what the
 * trainer writes and the trainer loads what PEFT writes: adapter_config.json (peft_type LORA, r,
 * lora_alpha, target_modules, use_rslora, ...) and adapter_model.safetensors with PEFT's names
 * (base_model.model.model.layers.N.self_attn.q_proj.lora_A.weight [r, in], ...lora_B.weight [out, r]).
 *
 * Reading is safe on a folder someone else chose (`grpo serve`'s /v1/load_lora_adapter): each file
 * is opened non-blocking and must be a regular file (a FIFO or device is refused, never read), with
 * `confined` its real path must lie inside the folder's (no link out of it), errors never quote a
 * file's contents, and with `limits` the rank and the bytes (on disk and to allocate) are checked
 * before anything is allocated or read.
 *
 * Is not: the adapter maths (lora.ts) or a reader of PEFT's other adapter types (only LORA without
 * bias, DoRA, per-module ranks or fan_in_fan_out, each refused by name).
 */
import { closeSync, constants, fstatSync, openSync, readSync, realpathSync } from 'node:fs';
import { join, resolve, sep } from 'node:path';
import type { ModelConfig } from './config.js';
import { writeFileDurably } from './durable-files.js';
import { LoraAdapters, peftTensorName, resolveTargetModules, type LoraSettings } from './lora.js';
import { encodeSafetensors, readHeaderFromDescriptor, readTensorsFromDescriptor } from './safetensors.js';

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

/** Bounds on an adapter read from a folder a client named (grpo serve). */
export interface AdapterLimits {
  /** Largest LoRA rank `r` accepted. */
  maxAdapterRank: number;
  /** Most bytes of adapter_model.safetensors, and of the float32 tensors its rank asks to allocate. */
  maxAdapterBytes: number;
}

/** How an adapter folder is read; the defaults (no limits, links followed) suit the user's own files. */
export interface AdapterReadOptions {
  limits?: AdapterLimits;
  /** Refuse a file whose real path is outside the folder's (a link out of it). */
  confined?: boolean;
}

/** adapter_config.json is a few hundred bytes; anything near this is not one. */
const MAX_CONFIG_BYTES = 1024 * 1024;

/**
 * Opens `name` in `folder` for reading (see the file header): non-blocking, so a FIFO cannot hang
 * the open, then refused unless fstat says it is a regular file. The caller closes the descriptor.
 */
function openAdapterFile(folder: string, name: string, confined: boolean): { fd: number; file: string; size: number } {
  const file = join(resolve(folder), name);
  const failed = (error: unknown): never => {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') throw new Error(`${file}: missing (an adapter folder needs ${name})`);
    throw new Error(`${file}: cannot be opened (${code ?? (error as Error).message})`);
  };
  let real = file;
  try {
    real = realpathSync(file);
  } catch (error) {
    failed(error);
  }
  if (confined && !real.startsWith(`${realpathSync(resolve(folder))}${sep}`))
    throw new Error(`${file}: links outside the adapter folder; refused`);
  let fd = -1;
  try {
    fd = openSync(real, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW);
  } catch (error) {
    failed(error);
  }
  const stat = fstatSync(fd);
  if (!stat.isFile()) {
    closeSync(fd);
    throw new Error(`${file}: not a regular file (a FIFO, device or folder); refused`);
  }
  return { fd, file, size: stat.size };
}

/** The JSON object of adapter_config.json, read through openAdapterFile; errors never quote the file. */
function readConfigObject(directory: string, confined: boolean): { file: string; raw: Record<string, unknown> } {
  const { fd, file, size } = openAdapterFile(directory, ADAPTER_CONFIG_FILE, confined);
  let text: string;
  try {
    if (size > MAX_CONFIG_BYTES) throw new Error(`${file}: ${size} bytes, too large for an adapter config`);
    const bytes = Buffer.alloc(size);
    let read = 0;
    while (read < size) {
      const count = readSync(fd, bytes, read, size - read, read);
      if (count === 0) break;
      read += count;
    }
    text = bytes.toString('utf8', 0, read);
  } finally {
    closeSync(fd);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new Error(`${file}: is not valid JSON`);
  }
  if (typeof json !== 'object' || json === null || Array.isArray(json))
    throw new Error(`${file}: must contain a JSON object`);
  return { file, raw: json as Record<string, unknown> };
}

/** The settings an adapter_config.json describes, refusing what this trainer cannot apply (naming the field). */
export function readAdapterSettings(
  directory: string,
  options: AdapterReadOptions = {},
): { settings: LoraSettings; baseModel: string | null } {
  const { file, raw } = readConfigObject(directory, options.confined === true);
  const refuse = (field: string, why: string): never => {
    throw new Error(`${file}: field "${field}" ${why}`);
  };
  if (raw.peft_type !== 'LORA') refuse('peft_type', `is ${JSON.stringify(raw.peft_type)}; only LORA adapters load`);
  if (!Number.isInteger(raw.r) || (raw.r as number) < 1) refuse('r', 'must be a positive integer');
  if (options.limits && (raw.r as number) > options.limits.maxAdapterRank)
    refuse('r', `is ${raw.r as number}, over this server's limit of ${options.limits.maxAdapterRank}`);
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

/** Loads an adapter folder for a model of `config`; every tensor is checked by name and shape before any is allocated. */
export function loadAdapter(directory: string, config: ModelConfig, options: AdapterReadOptions = {}): LoraAdapters {
  const { settings } = readAdapterSettings(directory, options);
  const shapes = LoraAdapters.modulePaths(config, settings);
  const floats = [...shapes.values()].reduce((total, { A, B }) => total + A[0] * A[1] + B[0] * B[1], 0);
  if (options.limits && floats * 4 > options.limits.maxAdapterBytes)
    throw new Error(
      `${join(resolve(directory), ADAPTER_CONFIG_FILE)}: field "r" ${settings.rank} needs ${floats * 4} bytes of adapter tensors for this model, over this server's limit of ${options.limits.maxAdapterBytes}`,
    );
  const { fd, file: weights, size } = openAdapterFile(directory, ADAPTER_WEIGHTS_FILE, options.confined === true);
  try {
    if (options.limits && size > options.limits.maxAdapterBytes)
      throw new Error(`${weights}: ${size} bytes, over this server's limit of ${options.limits.maxAdapterBytes}`);
    const header = readHeaderFromDescriptor(fd, weights);
    const expected = new Map<string, number[]>();
    for (const [path, { A, B }] of shapes) {
      expected.set(peftTensorName(path, 'A'), A);
      expected.set(peftTensorName(path, 'B'), B);
    }
    for (const [name, shape] of expected) {
      const entry = header.entries.get(name);
      if (!entry) throw new Error(`${weights}: missing adapter tensor "${name}"`);
      if (entry.shape.join(',') !== shape.join(','))
        throw new Error(
          `${weights}: adapter tensor "${name}" has shape [${entry.shape.join(', ')}], expected [${shape.join(', ')}]`,
        );
    }
    const unexpected = [...header.entries.keys()].filter((name) => !expected.has(name));
    if (unexpected.length > 0)
      throw new Error(
        `${weights}: ${unexpected.length} tensor(s) the adapter config does not describe, e.g. "${unexpected[0]}"`,
      );
    const adapters = LoraAdapters.create(config, settings, 0);
    adapters.load(readTensorsFromDescriptor(fd, weights, header), weights);
    return adapters;
  } finally {
    closeSync(fd);
  }
}
