/**
 * Reading and writing the safetensors format (https://github.com/huggingface/safetensors):
 * an 8-byte little-endian header length N, N bytes of JSON header
 * `{ name: { dtype, shape, data_offsets: [begin, end] }, "__metadata__"?: {...} }`, then the raw data,
 * offsets relative to the end of the header. F32, F16 and BF16 load as Float32Array; other dtypes are
 * refused by name. Sharded checkpoints (`model.safetensors.index.json`) are resolved here too.
 *
 * The header is checked the way the reference library (safetensors' `Metadata::validate`) checks
 * it: sorted by offset, the tensors tile the data section exactly — the first begins at 0, each
 * begins where the previous ends, the last ends at the end of the file — and each takes
 * product(shape) × dtype size bytes. Overlapping or stray bytes are refused naming the tensors.
 *
 * Large files are never read whole: the header is read first, then each tensor's own byte range.
 * This module knows nothing of model architectures; checkpoint.ts checks names and shapes. The header
 * checks and the dtype decoding live in safetensors-decode.ts, which a browser tab uses without Node.
 */
import { closeSync, existsSync, fstatSync, openSync, readFileSync, readSync } from 'node:fs';
import { basename, join } from 'node:path';
import { writeFileDurably } from './durable-files.js';
import { encodeSafetensorsBytes, type WriteSafetensorsOptions } from './safetensors-encode.js';
import { decodeToFloat32, isSupportedDtype, MAX_HEADER_BYTES, parseSafetensorsHeader } from './safetensors-decode.js';

export { numberToFloat16Bits, type WriteSafetensorsOptions } from './safetensors-encode.js';
export { decodeToFloat32, float16BitsToNumber } from './safetensors-decode.js';

/** A dense float32 tensor as stored in a checkpoint: row-major data with its shape. */
export interface StoredTensor {
  shape: number[];
  data: Float32Array;
}

/** The element types this reader converts to float32. */
export type SafetensorsDtype = 'F32' | 'F16' | 'BF16';

/** One entry of a safetensors header. */
export interface SafetensorsEntry {
  dtype: string;
  shape: number[];
  dataOffsets: [number, number];
}

/** A parsed header: where each tensor lives in the file and the free-form metadata. */
export interface SafetensorsHeader {
  entries: Map<string, SafetensorsEntry>;
  metadata: Record<string, string>;
  /** Byte offset in the file where the data section starts (8 + header length). */
  dataStart: number;
  fileSize: number;
}

function readExactly(fd: number, length: number, position: number, file: string, what: string): Buffer {
  const buffer = Buffer.alloc(length);
  let done = 0;
  while (done < length) {
    const read = readSync(fd, buffer, done, length - done, position + done);
    if (read === 0) throw new Error(`${file}: truncated while reading ${what} (${done} of ${length} bytes)`);
    done += read;
  }
  return buffer;
}

/** Reads and validates the header of a safetensors file from an open file descriptor. */
export function readHeaderFromDescriptor(fd: number, file: string): SafetensorsHeader {
  const fileSize = fstatSync(fd).size;
  if (fileSize < 8) throw new Error(`${file}: too short to be a safetensors file (${fileSize} bytes)`);
  const headerLength = Number(readExactly(fd, 8, 0, file, 'the header length').readBigUInt64LE(0));
  if (headerLength > MAX_HEADER_BYTES)
    throw new Error(`${file}: header length ${headerLength} is implausible (corrupt file?)`);
  if (8 + headerLength > fileSize)
    throw new Error(`${file}: header of ${headerLength} bytes runs past the end of the file (truncated file?)`);
  const text = readExactly(fd, headerLength, 8, file, 'the header').toString('utf8');
  return parseSafetensorsHeader(text, file, 8 + headerLength, fileSize);
}

/** Reads only the header of a safetensors file (names, dtypes, shapes, offsets). */
export function readSafetensorsHeader(file: string): SafetensorsHeader {
  const fd = openSync(file, 'r');
  try {
    return readHeaderFromDescriptor(fd, file);
  } finally {
    closeSync(fd);
  }
}

/** Loads every tensor (or only `names`) of one safetensors file as float32, reading each byte range once. */
export function readSafetensors(file: string, names?: Iterable<string>): Map<string, StoredTensor> {
  const fd = openSync(file, 'r');
  try {
    return readTensorsFromDescriptor(fd, file, readHeaderFromDescriptor(fd, file), names);
  } finally {
    closeSync(fd);
  }
}

/** The tensors (all, or `names`) of a file the caller opened and whose header it has read. */
export function readTensorsFromDescriptor(
  fd: number,
  file: string,
  header: SafetensorsHeader,
  names?: Iterable<string>,
): Map<string, StoredTensor> {
  const wanted = names ? [...names] : [...header.entries.keys()];
  const tensors = new Map<string, StoredTensor>();
  for (const name of wanted) {
    const entry = header.entries.get(name);
    if (!entry) throw new Error(`${file}: has no tensor "${name}"`);
    if (!isSupportedDtype(entry.dtype)) {
      throw new Error(`${file}: tensor "${name}" has dtype ${entry.dtype}; supported dtypes are F32, F16, BF16`);
    }
    const [begin, end] = entry.dataOffsets;
    const bytes = readExactly(fd, end - begin, header.dataStart + begin, file, `tensor "${name}"`);
    tensors.set(name, { shape: [...entry.shape], data: decodeToFloat32(bytes, entry.dtype) });
  }
  return tensors;
}

/** Builds a complete safetensors file in memory (safetensors-encode.ts) as a Buffer; tensors are laid out in the given order. */
export function encodeSafetensors(tensors: Map<string, StoredTensor>, options: WriteSafetensorsOptions = {}): Buffer {
  const bytes = encodeSafetensorsBytes(tensors, options);
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** Writes tensors to one safetensors file (F32 by default, which round-trips bit-exactly), fsynced. */
export function writeSafetensors(
  file: string,
  tensors: Map<string, StoredTensor>,
  options: WriteSafetensorsOptions = {},
): void {
  writeFileDurably(file, encodeSafetensors(tensors, options));
}

/** The file names holding a checkpoint's weights: the single file, or the shards named by the index. */
export function listWeightFiles(directory: string): { files: string[]; weightMap: Map<string, string> | null } {
  const single = join(directory, 'model.safetensors');
  const indexFile = join(directory, 'model.safetensors.index.json');
  if (existsSync(indexFile)) {
    let index: { weight_map?: Record<string, unknown> };
    try {
      index = JSON.parse(readFileSync(indexFile, 'utf8'));
    } catch (error) {
      throw new Error(`${indexFile}: not valid JSON (${(error as Error).message})`);
    }
    if (typeof index.weight_map !== 'object' || index.weight_map === null)
      throw new Error(`${indexFile}: has no "weight_map" object`);
    const weightMap = new Map<string, string>();
    for (const [name, shard] of Object.entries(index.weight_map)) {
      if (typeof shard !== 'string' || shard !== basename(shard)) {
        throw new Error(
          `${indexFile}: weight_map["${name}"] must be a file name in the same folder, got ${JSON.stringify(shard)}`,
        );
      }
      weightMap.set(name, shard);
    }
    const files = [...new Set(weightMap.values())];
    for (const shard of files) {
      if (!existsSync(join(directory, shard)))
        throw new Error(`${indexFile}: names shard ${shard}, which is missing from ${directory}`);
    }
    return { files, weightMap };
  }
  if (existsSync(single)) return { files: ['model.safetensors'], weightMap: null };
  throw new Error(
    `${directory}: no model.safetensors or model.safetensors.index.json (is this a Hugging Face checkpoint folder?)`,
  );
}

/** Loads all tensors of a checkpoint folder, single-file or sharded, checking that the index agrees with the shards. */
export function readSafetensorsFolder(directory: string): {
  tensors: Map<string, StoredTensor>;
  tensorFiles: Map<string, string>;
} {
  const { files, weightMap } = listWeightFiles(directory);
  const tensors = new Map<string, StoredTensor>();
  const tensorFiles = new Map<string, string>();
  for (const file of files) {
    const path = join(directory, file);
    const names = weightMap ? [...weightMap].filter(([, shard]) => shard === file).map(([name]) => name) : undefined;
    for (const [name, tensor] of readSafetensors(path, names)) {
      if (tensors.has(name))
        throw new Error(`${directory}: tensor "${name}" appears in both ${tensorFiles.get(name)} and ${file}`);
      tensors.set(name, tensor);
      tensorFiles.set(name, path);
    }
  }
  return { tensors, tensorFiles };
}
