/**
 * The Node-free half of the safetensors reader: checking a header (every tensor's dtype, shape and
 * byte range, and that the tensors tile the data section exactly, as safetensors' own
 * `Metadata::validate` does), decoding F32/F16/BF16 bytes to float32, and reading a whole file held
 * in memory, which is how a browser tab reads a picked model.
 *
 * Is not: file access (safetensors.ts reads a file's header and tensors by byte range and imports
 * this), nor writing (safetensors-encode.ts).
 */
import { BYTES_PER_ELEMENT } from './safetensors-encode.js';
import type { SafetensorsDtype, SafetensorsEntry, SafetensorsHeader, StoredTensor } from './safetensors.js';

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
export const MAX_HEADER_BYTES = 100_000_000;

export function isSupportedDtype(dtype: string): dtype is SafetensorsDtype {
  return dtype === 'F32' || dtype === 'F16' || dtype === 'BF16';
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

/** Parses and checks a safetensors header's JSON text; the data section runs from `dataStart` to `fileSize`. */
export function parseSafetensorsHeader(
  text: string,
  file: string,
  dataStart: number,
  fileSize: number,
): SafetensorsHeader {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    // Not the parser's message: it quotes the text, and the file may not be ours to show (a link to a secret).
    throw new Error(`${file}: header is not valid JSON`);
  }
  if (typeof json !== 'object' || json === null || Array.isArray(json))
    throw new Error(`${file}: header is not a JSON object`);
  const entries = new Map<string, SafetensorsEntry>();
  let metadata: Record<string, string> = {};
  for (const [name, raw] of Object.entries(json)) {
    if (name === '__metadata__') metadata = raw as Record<string, string>;
    else entries.set(name, parseEntry(file, name, raw, fileSize - dataStart));
  }
  checkTiling(file, entries, fileSize - dataStart);
  return { entries, metadata, dataStart, fileSize };
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
export function decodeToFloat32(bytes: Uint8Array, dtype: SafetensorsDtype): Float32Array {
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

/**
 * Every tensor of a safetensors file held in memory (a file picked in a browser tab), as float32,
 * with the same header checks as a file read from disk.
 */
export function readSafetensorsBytes(bytes: Uint8Array, file: string): Map<string, StoredTensor> {
  if (bytes.length < 8) throw new Error(`${file}: too short to be a safetensors file (${bytes.length} bytes)`);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const headerLength = Number(view.getBigUint64(0, true));
  if (headerLength > MAX_HEADER_BYTES)
    throw new Error(`${file}: header length ${headerLength} is implausible (corrupt file?)`);
  if (8 + headerLength > bytes.length)
    throw new Error(`${file}: header of ${headerLength} bytes runs past the end of the file (truncated file?)`);
  const text = new TextDecoder().decode(bytes.subarray(8, 8 + headerLength));
  const header = parseSafetensorsHeader(text, file, 8 + headerLength, bytes.length);
  const tensors = new Map<string, StoredTensor>();
  for (const [name, entry] of header.entries) {
    if (!isSupportedDtype(entry.dtype))
      throw new Error(`${file}: tensor "${name}" has dtype ${entry.dtype}; supported dtypes are F32, F16, BF16`);
    const [begin, end] = entry.dataOffsets;
    const data = decodeToFloat32(bytes.subarray(header.dataStart + begin, header.dataStart + end), entry.dtype);
    tensors.set(name, { shape: [...entry.shape], data });
  }
  return tensors;
}
