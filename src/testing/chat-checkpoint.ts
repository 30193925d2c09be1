/**
 * A chat checkpoint for tests, made from a small base checkpoint the way chat models are made from
 * base ones: ChatML's special tokens `<|im_start|>` and `<|im_end|>` added to the tokenizer (as new
 * ids after the vocabulary, special, never split), the embedding matrix grown by two rows, the
 * Qwen2.5 chat template in tokenizer_config.json, and `<|im_end|>` as an end-of-turn stop id in
 * generation_config.json. The weights of the new rows copy the base's BOS/EOS rows, so the model
 * runs; it is not trained to chat.
 *
 * Is not: a model fixture kept in the tree (the test builds it in a temporary folder from
 * ../shared's TinyStories checkpoint), nor a general safetensors writer (one F32 tensor is grown).
 */
import { cpSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** Qwen2.5's ChatML template (the default system prompt when a conversation has none), without tool calls. */
export const QWEN_CHATML =
  "{%- if messages[0]['role'] == 'system' %}{{- '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}" +
  "{%- else %}{{- '<|im_start|>system\\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\\n' }}{%- endif %}" +
  "{%- for message in messages %}{%- if not (message.role == 'system' and loop.first) %}" +
  "{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>' + '\\n' }}{%- endif %}{%- endfor %}" +
  "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}";

const readJson = (file: string) => JSON.parse(readFileSync(file, 'utf8'));
const writeJson = (file: string, value: unknown) => writeFileSync(file, `${JSON.stringify(value, null, 2)}\n`);

/** Grows the F32 tensor `name` of a safetensors file by rows copied from `sourceRows`. */
function growRows(file: string, name: string, sourceRows: number[]): void {
  const bytes = readFileSync(file);
  const headerLength = Number(bytes.readBigUInt64LE(0));
  const header = JSON.parse(bytes.subarray(8, 8 + headerLength).toString('utf8'));
  const data = bytes.subarray(8 + headerLength);
  const entry = header[name];
  if (!entry || entry.dtype !== 'F32') throw new Error(`${file}: no F32 tensor ${name}`);
  const [rows, width] = entry.shape as [number, number];
  const rowBytes = width * 4;
  const added = Buffer.concat(
    sourceRows.map((row) =>
      data.subarray(entry.data_offsets[0] + row * rowBytes, entry.data_offsets[0] + (row + 1) * rowBytes),
    ),
  );
  const growth = added.length;
  // Tensors are laid out in offset order; everything after the grown one moves by `growth` bytes.
  for (const [key, value] of Object.entries(header) as [string, { data_offsets: [number, number] }][]) {
    if (key === '__metadata__' || key === name) continue;
    if (value.data_offsets[0] >= entry.data_offsets[1])
      value.data_offsets = [value.data_offsets[0] + growth, value.data_offsets[1] + growth];
  }
  const end = entry.data_offsets[1];
  entry.shape = [rows + sourceRows.length, width];
  entry.data_offsets = [entry.data_offsets[0], end + growth];
  let headerText = JSON.stringify(header);
  headerText += ' '.repeat((8 - (headerText.length % 8)) % 8);
  const length = Buffer.alloc(8);
  length.writeBigUInt64LE(BigInt(Buffer.byteLength(headerText)));
  writeFileSync(
    file,
    Buffer.concat([length, Buffer.from(headerText), data.subarray(0, end), added, data.subarray(end)]),
  );
}

/** Copies `baseDirectory` to `targetDirectory` as a ChatML chat checkpoint; returns the two new ids. */
export function makeChatCheckpoint(baseDirectory: string, targetDirectory: string): { imStart: number; imEnd: number } {
  cpSync(baseDirectory, targetDirectory, { recursive: true });
  const config = readJson(join(targetDirectory, 'config.json'));
  const imStart = config.vocab_size as number;
  const imEnd = imStart + 1;
  config.vocab_size = imStart + 2;
  writeJson(join(targetDirectory, 'config.json'), config);
  const tokenizer = readJson(join(targetDirectory, 'tokenizer.json'));
  const special = { single_word: false, lstrip: false, rstrip: false, normalized: false, special: true };
  tokenizer.added_tokens.push(
    { id: imStart, content: '<|im_start|>', ...special },
    { id: imEnd, content: '<|im_end|>', ...special },
  );
  writeJson(join(targetDirectory, 'tokenizer.json'), tokenizer);
  const tokenizerConfig = readJson(join(targetDirectory, 'tokenizer_config.json'));
  tokenizerConfig.added_tokens_decoder[String(imStart)] = { content: '<|im_start|>', ...special };
  tokenizerConfig.added_tokens_decoder[String(imEnd)] = { content: '<|im_end|>', ...special };
  tokenizerConfig.chat_template = QWEN_CHATML;
  tokenizerConfig.eos_token = '<|im_end|>';
  writeJson(join(targetDirectory, 'tokenizer_config.json'), tokenizerConfig);
  const generation = readJson(join(targetDirectory, 'generation_config.json'));
  generation.eos_token_id = [imEnd, config.eos_token_id];
  writeJson(join(targetDirectory, 'generation_config.json'), generation);
  // Tied checkpoints may store the shared matrix under either name; an untied one has both.
  const weights = join(targetDirectory, 'model.safetensors');
  const names = Object.keys(
    JSON.parse(
      readFileSync(weights)
        .subarray(8, 8 + Number(readFileSync(weights).readBigUInt64LE(0)))
        .toString('utf8'),
    ),
  );
  for (const name of ['model.embed_tokens.weight', 'lm_head.weight'].filter((candidate) => names.includes(candidate)))
    growRows(weights, name, [config.bos_token_id, config.eos_token_id]);
  return { imStart, imEnd };
}
