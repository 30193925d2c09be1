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
 * This module knows nothing of model architectures; checkpoint.ts checks names and shapes.
 */
import { closeSync, existsSync, fstatSync, openSync, readFileSync, readSync } from 'node:fs';
import { basename, join } from 'node:path';
import { writeFileDurably } from './durable-files.js';
import { BYTES_PER_ELEMENT, encodeSafetensorsBytes, type WriteSafetensorsOptions } from './safetensors-encode.js';

export { numberToFloat16Bits, type WriteSafetensorsOptions } from './safetensors-encode.js';

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

const LITTLE_ENDIAN = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;
// Sizes of the format's other dtypes: they are refused when loaded, but their byte ranges are
// still checked so that the layout check covers the whole file.
const STORED_BYTES_PER_ELEMENT: Record<string, number> = {
  ...BYTES_PER_ELEMENT,
  BOOL: 1,
  U8: 1,
  I8: 1,
  F8_E5M2: 1,
  F8_E4M3: 1,
  F8_E8M0: 1,
  I16: 2,
  U16: 2,
  I32: 4,
  U32: 4,
  I64: 8,
  U64: 8,
  F64: 8,
  C64: 8,
};
// The format's own limit on header size; a larger value means a corrupt or foreign file.
const MAX_HEADER_BYTES = 100_000_000;

function isSupportedDtype(dtype: string): dtype is SafetensorsDtype {
  return dtype === 'F32' || dtype === 'F16' || dtype === 'BF16';
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

function parseEntry(file: string, name: string, raw: unknown, dataLength: number): SafetensorsEntry {
  const value = raw as { dtype?: unknown; shape?: unknown; data_offsets?: unknown };
  if (typeof value !== 'object' || value === null) throw new Error(`${file}: tensor "${name}" header is not an object`);
  const { dtype, shape, data_offsets: offsets } = value;
  if (typeof dtype !== 'string') throw new Error(`${file}: tensor "${name}" has no dtype`);
  if (!Array.isArray(shape) || !shape.every((d) => Number.isInteger(d) && d >= 0)) {
    throw new Error(`${file}: tensor "${name}" has an invalid shape ${JSON.stringify(shape)}`);
  }
  if (!Array.isArray(offsets) || offsets.length !== 2 || !offsets.every((o) => Number.isInteger(o) && o >= 0)) {
    throw new Error(`${file}: tensor "${name}" has invalid data_offsets ${JSON.stringify(offsets)}`);
  }
  const [begin, end] = offsets as [number, number];
  if (end < begin) throw new Error(`${file}: tensor "${name}" has data_offsets end < begin`);
  if (end > dataLength) {
    throw new Error(
      `${file}: tensor "${name}" ends at data byte ${end} but the file has only ${dataLength} data bytes (truncated file?)`,
    );
  }
  if (Object.hasOwn(STORED_BYTES_PER_ELEMENT, dtype)) {
    const expected = (shape as number[]).reduce((a, b) => a * b, 1) * STORED_BYTES_PER_ELEMENT[dtype];
    if (end - begin !== expected) {
      throw new Error(
        `${file}: tensor "${name}" (${dtype} ${JSON.stringify(shape)}) should take ${expected} bytes, its offsets give ${end - begin}`,
      );
    }
  }
  return { dtype, shape: shape as number[], dataOffsets: [begin, end] };
}

/** Refuses a header whose tensors, sorted by offset, do not tile the `dataLength` data bytes exactly. */
function checkTiling(file: string, entries: Map<string, SafetensorsEntry>, dataLength: number): void {
  const sorted = [...entries].sort(
    ([, a], [, b]) => a.dataOffsets[0] - b.dataOffsets[0] || a.dataOffsets[1] - b.dataOffsets[1],
  );
  let end = 0;
  let previous: string | null = null;
  for (const [
    name,
    {
      dataOffsets: [begin, stop],
    },
  ] of sorted) {
    if (begin < end) {
      throw new Error(
        `${file}: tensor "${name}" (data bytes ${begin}..${stop}) overlaps tensor "${previous}", which ends at byte ${end}`,
      );
    }
    if (begin > end) {
      const after = previous === null ? 'the start of the data section' : `tensor "${previous}" (ends at byte ${end})`;
      throw new Error(
        `${file}: ${begin - end} unused data bytes between ${after} and tensor "${name}" (begins at byte ${begin})`,
      );
    }
    end = stop;
    previous = name;
  }
  if (end !== dataLength) {
    const last = previous === null ? 'no tensor' : `the last tensor "${previous}"`;
    throw new Error(
      `${file}: the data section has ${dataLength} bytes but ${last} ends at byte ${end} (${dataLength - end} stray bytes at the end)`,
    );
  }
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
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    // Not the parser's message: it quotes the text, and the file may not be ours to show (a link to a secret).
    throw new Error(`${file}: header is not valid JSON`);
  }
  if (typeof json !== 'object' || json === null || Array.isArray(json))
    throw new Error(`${file}: header is not a JSON object`);
  const dataStart = 8 + headerLength;
  const entries = new Map<string, SafetensorsEntry>();
  let metadata: Record<string, string> = {};
  for (const [name, raw] of Object.entries(json)) {
    if (name === '__metadata__') metadata = raw as Record<string, string>;
    else entries.set(name, parseEntry(file, name, raw, fileSize - dataStart));
  }
  checkTiling(file, entries, fileSize - dataStart);
  return { entries, metadata, dataStart, fileSize };
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

/** Converts one IEEE half-precision bit pattern to a number, exactly (subnormals, ±inf, NaN included). */
export function float16BitsToNumber(bits: number): number {
  const sign = bits & 0x8000 ? -1 : 1;
  const exponent = (bits >> 10) & 0x1f;
  const mantissa = bits & 0x3ff;
  if (exponent === 0) return sign * mantissa * 2 ** -24; // subnormal (or zero): m · 2^-14 / 1024
  if (exponent === 0x1f) return mantissa === 0 ? sign * Infinity : NaN;
  return sign * (1 + mantissa / 1024) * 2 ** (exponent - 15);
}

let float16Values: Float32Array | null = null;

/** All 65,536 half-precision values as float32 (every half is exactly representable), built on first use. */
function float16Table(): Float32Array {
  if (!float16Values) {
    float16Values = new Float32Array(65536);
    for (let bits = 0; bits < 65536; bits++) float16Values[bits] = float16BitsToNumber(bits);
  }
  return float16Values;
}

/** Converts raw little-endian bytes of the given dtype to float32 values. */
export function decodeToFloat32(bytes: Buffer, dtype: SafetensorsDtype): Float32Array {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const count = bytes.byteLength / BYTES_PER_ELEMENT[dtype];
  const out = new Float32Array(count);
  if (dtype === 'F32' && LITTLE_ENDIAN) {
    new Uint8Array(out.buffer).set(bytes); // same byte order: a plain copy is exact
  } else if (dtype === 'F32') {
    for (let i = 0; i < count; i++) out[i] = view.getFloat32(i * 4, true);
  } else if (dtype === 'F16') {
    const table = float16Table();
    for (let i = 0; i < count; i++) out[i] = table[view.getUint16(i * 2, true)];
  } else {
    // bfloat16 is the top half of a float32: shifting the bits back is exact, NaN payloads included.
    const bits = new Uint32Array(out.buffer);
    for (let i = 0; i < count; i++) bits[i] = view.getUint16(i * 2, true) << 16;
  }
  return out;
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
