/**
 * Encoding a safetensors file in memory, free of Node so that a browser tab can save a checkpoint:
 * the 8-byte little-endian header length, the JSON header padded to 8 bytes, then the tensors' data
 * as F32 (bit-exact), F16 or BF16 (round-to-nearest-even).
 *
 * Is not: reading, or writing to disk (safetensors.ts, which re-exports this as a Buffer).
 */
import type { SafetensorsDtype, StoredTensor } from './safetensors.js';

export const BYTES_PER_ELEMENT: Record<SafetensorsDtype, number> = { F32: 4, F16: 2, BF16: 2 };

/** Rounds float32 values to bfloat16 bits with round-to-nearest-even, the way torch does (NaN stays NaN). */
function encodeBfloat16(data: Float32Array, out: DataView, offset: number): void {
  const bits = new Uint32Array(data.buffer, data.byteOffset, data.length);
  for (let i = 0; i < data.length; i++) {
    const x = bits[i];
    const isNaN = (x & 0x7fffffff) > 0x7f800000;
    const rounded = isNaN ? (x >>> 16) | 0x40 : (x + 0x7fff + ((x >>> 16) & 1)) >>> 16;
    out.setUint16(offset + i * 2, rounded & 0xffff, true);
  }
}

/** Rounds one number to IEEE half-precision bits, round-to-nearest-even, overflow to ±inf. */
export function numberToFloat16Bits(value: number): number {
  if (Number.isNaN(value)) return 0x7e00;
  const sign = value < 0 || Object.is(value, -0) ? 0x8000 : 0;
  const magnitude = Math.abs(value);
  if (magnitude >= 65520) return sign | 0x7c00; // rounds past the largest half (65504)
  if (magnitude < 2 ** -14) return sign | roundHalfEven(magnitude * 2 ** 24); // subnormal range; may round up to the smallest normal
  const exponent = Math.floor(Math.log2(magnitude));
  const normalised = exponent + (magnitude >= 2 ** (exponent + 1) ? 1 : magnitude < 2 ** exponent ? -1 : 0);
  const mantissa = roundHalfEven((magnitude / 2 ** normalised - 1) * 1024);
  // A mantissa that rounds to 1024 carries into the exponent; the bit arithmetic does that for us.
  return sign | (((normalised + 15) << 10) + mantissa);
}

function roundHalfEven(x: number): number {
  const floor = Math.floor(x);
  const rest = x - floor;
  if (rest > 0.5) return floor + 1;
  if (rest < 0.5) return floor;
  return floor % 2 === 0 ? floor : floor + 1;
}

/** Options for writing: the stored dtype (F32 keeps values bit-exact) and free-form string metadata. */
export interface WriteSafetensorsOptions {
  dtype?: SafetensorsDtype;
  metadata?: Record<string, string>;
}

/** Builds a complete safetensors file in memory; tensors are laid out in the given order. */
export function encodeSafetensorsBytes(
  tensors: Map<string, StoredTensor>,
  options: WriteSafetensorsOptions = {},
): Uint8Array {
  const dtype = options.dtype ?? 'F32';
  const header: Record<string, unknown> = {};
  if (options.metadata) header.__metadata__ = options.metadata;
  let offset = 0;
  for (const [name, tensor] of tensors) {
    const count = tensor.shape.reduce((a, b) => a * b, 1);
    if (count !== tensor.data.length) {
      throw new Error(
        `tensor "${name}": shape ${JSON.stringify(tensor.shape)} needs ${count} values, data has ${tensor.data.length}`,
      );
    }
    const size = count * BYTES_PER_ELEMENT[dtype];
    header[name] = { dtype, shape: tensor.shape, data_offsets: [offset, offset + size] };
    offset += size;
  }
  let headerText = JSON.stringify(header);
  // The format asks for the data section to start 8-byte aligned; pad the JSON with spaces.
  const encoder = new TextEncoder();
  headerText += ' '.repeat((8 - (encoder.encode(headerText).length % 8)) % 8);
  const headerBytes = encoder.encode(headerText);
  const out = new Uint8Array(8 + headerBytes.length + offset);
  const view = new DataView(out.buffer, out.byteOffset, out.byteLength);
  view.setBigUint64(0, BigInt(headerBytes.length), true);
  out.set(headerBytes, 8);
  let position = 8 + headerBytes.length;
  for (const tensor of tensors.values()) {
    if (dtype === 'F32') {
      // The platform byte order: little-endian wherever Node and browsers run.
      out.set(new Uint8Array(tensor.data.buffer, tensor.data.byteOffset, tensor.data.byteLength), position);
    } else if (dtype === 'BF16') {
      encodeBfloat16(tensor.data, view, position);
    } else {
      for (let i = 0; i < tensor.data.length; i++)
        view.setUint16(position + i * 2, numberToFloat16Bits(tensor.data[i]), true);
    }
    position += tensor.data.length * BYTES_PER_ELEMENT[dtype];
  }
  return out;
}
