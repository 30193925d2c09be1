/**
 * `grpo generate` and `grpo score`: sample from, or score text under, any checkpoint folder, with a
 * PEFT LoRA adapter applied on top (--adapter); `grpo merge` folds an adapter into its base weights
 * and writes a plain HF checkpoint. Argument parsing lives in main.ts; these functions take typed
 * options and print to stdout.
 * Is not: a chat UI. With --json the output carries ids, text and logprobs.
 */
import { loadAdapter } from '../model/adapter-files.js';
import { loadCheckpoint, resolveStopTokenIds, saveCheckpoint } from '../model/checkpoint.js';
import { encodeChat } from '../model/chat-template.js';
import { checkTokenizerFitsModel, loadTokenizer } from '../model/tokenizer.js';
import { Transformer } from '../model/transformer.js';
import { generate } from '../sampling/index.js';
import { logSoftmaxGather, noGrad } from '../tensor/index.js';

/** The base checkpoint, its tokenizer, and the model with the adapter (if any) attached. */
/** The checkpoint --model names; its errors (a missing folder, an adapter folder) name the flag. */
export function loadModelFlag(directory: string): ReturnType<typeof loadCheckpoint> {
  try {
    return loadCheckpoint(directory);
  } catch (error) {
    throw new Error(`--model: ${(error as Error).message}`);
  }
}

/** The adapter --adapter names, for `config`; its errors name the flag. */
export function loadAdapterFlag(directory: string, config: ReturnType<typeof loadCheckpoint>['config']) {
  try {
    return loadAdapter(directory, config);
  } catch (error) {
    throw new Error(`--adapter: ${(error as Error).message}`);
  }
}

function loadModel(directory: string, adapter?: string) {
  const checkpoint = loadModelFlag(directory);
  const tokenizer = loadTokenizer(directory);
  checkTokenizerFitsModel(tokenizer, checkpoint.config, directory);
  const model = Transformer.fromTensors(checkpoint.config, checkpoint.tensors);
  if (adapter !== undefined) model.attachAdapters(loadAdapterFlag(adapter, checkpoint.config));
  return { checkpoint, tokenizer, model };
}

export interface MergeCommandOptions {
  /** The base checkpoint folder the adapter was trained on. */
  model: string;
  /** A PEFT LoRA adapter folder (adapter_config.json + adapter_model.safetensors). */
  adapter: string;
  out: string;
}

/** Writes base + s·B·A as a plain HF checkpoint (tokenizer and generation files copied from the base). */
export function runMergeCommand(
  options: MergeCommandOptions,
  write: (line: string) => void = (line) => process.stdout.write(`${line}\n`),
): void {
  const checkpoint = loadModelFlag(options.model);
  const adapters = loadAdapterFlag(options.adapter, checkpoint.config);
  saveCheckpoint(options.out, {
    config: checkpoint.config,
    tensors: adapters.mergeInto(checkpoint.tensors),
    generationConfig: checkpoint.generationConfig,
    sourceDir: options.model,
  });
  write(`merged ${adapters.pairs.size} adapted linears into ${options.out}`);
}

export interface GenerateCommandOptions {
  model: string;
  /** A PEFT LoRA adapter folder applied on top of `model`. */
  adapter?: string;
  prompt: string;
  chat?: boolean;
  maxNewTokens: number;
  temperature: number;
  topP: number;
  topK: number;
  seed: number;
  numSamples: number;
  json?: boolean;
}

export function runGenerateCommand(
  options: GenerateCommandOptions,
  write: (line: string) => void = (line) => process.stdout.write(`${line}\n`),
): void {
  const { checkpoint, tokenizer, model } = loadModel(options.model, options.adapter);
  const promptIds = options.chat
    ? encodeChat(tokenizer, [{ role: 'user', content: options.prompt }], { addGenerationPrompt: true })
    : tokenizer.encode(options.prompt, { addSpecialTokens: true });
  const completions = generate(model, {
    prompts: [promptIds],
    numSamples: options.numSamples,
    maxNewTokens: options.maxNewTokens,
    temperature: options.temperature,
    topP: options.topP,
    topK: options.topK,
    seed: options.seed,
    stopTokenIds: resolveStopTokenIds(checkpoint.config, checkpoint.generationConfig),
  });
  for (const completion of completions) {
    const text = tokenizer.decode(completion.ids, { skipSpecialTokens: true });
    if (options.json) {
      write(
        JSON.stringify({
          sample: completion.sampleIndex,
          promptIds,
          ids: completion.ids,
          text,
          logprobs: completion.logprobs,
          finishReason: completion.finishReason,
        }),
      );
    } else {
      write(
        options.numSamples > 1
          ? `--- sample ${completion.sampleIndex}\n${options.prompt}${text}`
          : `${options.prompt}${text}`,
      );
    }
  }
}

export interface ScoreCommandOptions {
  model: string;
  /** A PEFT LoRA adapter folder applied on top of `model`. */
  adapter?: string;
  text?: string;
  ids?: string;
  json?: boolean;
}

export function runScoreCommand(
  options: ScoreCommandOptions,
  write: (line: string) => void = (line) => process.stdout.write(`${line}\n`),
): void {
  if ((options.text === undefined) === (options.ids === undefined))
    throw new Error('grpo score: give exactly one of --text or --ids');
  const { tokenizer, model } = loadModel(options.model, options.adapter);
  const ids =
    options.text !== undefined
      ? tokenizer.encode(options.text, { addSpecialTokens: true })
      : options.ids!.split(',').map((part, index) => {
          const id = Number(part.trim());
          if (!Number.isInteger(id)) throw new Error(`grpo score: --ids entry ${index} ("${part}") is not an integer`);
          return id;
        });
  if (ids.length < 2) throw new Error('grpo score: need at least two tokens (the first one is only context)');
  const flag = options.text !== undefined ? '--text' : '--ids';
  const bad = ids.findIndex((id) => id < 0 || id >= model.config.vocabSize);
  if (bad >= 0)
    throw new Error(
      `grpo score: --ids entry ${bad} (${ids[bad]}) is outside the vocabulary [0, ${model.config.vocabSize})`,
    );
  if (ids.length > model.config.maxPositionEmbeddings) {
    throw new Error(
      `grpo score: ${flag} is ${ids.length} tokens, over the model's max_position_embeddings (${model.config.maxPositionEmbeddings})`,
    );
  }
  const logprobs = noGrad(() =>
    logSoftmaxGather(model.forward(Int32Array.from(ids.slice(0, -1)), 1), Int32Array.from(ids.slice(1))),
  );
  const values = Array.from(logprobs.data);
  const meanNll = -values.reduce((a, b) => a + b, 0) / values.length;
  const result = {
    ids,
    tokens: ids.map((id) => tokenizer.decode([id])),
    logprobs: [null, ...values],
    meanNll,
    perplexity: Math.exp(meanNll),
  };
  if (options.json) write(JSON.stringify(result));
  else {
    result.tokens.forEach((token, i) =>
      write(
        `${String(ids[i]).padStart(6)}  ${JSON.stringify(token).padEnd(16)} ${i === 0 ? '' : values[i - 1].toFixed(4)}`,
      ),
    );
    write(`mean NLL ${meanNll.toFixed(4)}  perplexity ${result.perplexity.toFixed(3)}`);
  }
}
