/**
 * A reader of TensorBoard event files for the tests, independent of the writer
 * (src/run/tensorboard-events.ts): TFRecord framing with both CRC-32Cs checked (a bitwise CRC, no
 * table), then the Event and Summary protobuf fields. `scalarsOf` and `metricsScalars` put a run's
 * events and its metrics.jsonl in the same shape, [step, tag, value as float32], to compare.
 *
 * Is not: a general protobuf or TensorBoard reader (only the fields the writer uses).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** CRC-32C computed bit by bit (no table), so it shares nothing with the writer's. */
export function crc32c(bytes: Uint8Array): number {
  let crc = ~0;
  for (const byte of bytes) {
    crc ^= byte;
    for (let bit = 0; bit < 8; bit++) crc = crc & 1 ? (crc >>> 1) ^ 0x82f63b78 : crc >>> 1;
  }
  return ~crc >>> 0;
}
const masked = (crc: number): number => (((crc >>> 15) | (crc << 17)) + 0xa282ead8) >>> 0;

/** The records of a TFRecord file; throws on a bad length CRC, data CRC or a cut record. */
export function tfRecords(file: Buffer): Buffer[] {
  const records: Buffer[] = [];
  let at = 0;
  while (at < file.length) {
    if (at + 12 > file.length) throw new Error(`record header cut at byte ${at}`);
    const length = Number(file.readBigUInt64LE(at));
    if (file.readUInt32LE(at + 8) !== masked(crc32c(file.subarray(at, at + 8))))
      throw new Error(`length CRC wrong at byte ${at}`);
    const data = file.subarray(at + 12, at + 12 + length);
    if (data.length !== length || at + 16 + length > file.length) throw new Error(`record cut at byte ${at}`);
    if (file.readUInt32LE(at + 12 + length) !== masked(crc32c(data))) throw new Error(`data CRC wrong at byte ${at}`);
    records.push(data);
    at += 16 + length;
  }
  return records;
}

/** A protobuf message's fields as [field number, value]: varints as numbers, fixed64/32 and bytes as buffers. */
function protoFields(message: Buffer): [number, number | Buffer][] {
  const fields: [number, number | Buffer][] = [];
  let at = 0;
  const varint = () => {
    let value = 0;
    for (let scale = 1; ; scale *= 128) {
      const byte = message[at++];
      value += (byte & 0x7f) * scale;
      if (byte < 0x80) return value;
    }
  };
  while (at < message.length) {
    const key = varint();
    const [field, wireType] = [Math.floor(key / 8), key % 8];
    if (wireType === 0) fields.push([field, varint()]);
    else if (wireType === 1) fields.push([field, message.subarray(at, (at += 8))]);
    else if (wireType === 5) fields.push([field, message.subarray(at, (at += 4))]);
    else if (wireType === 2) {
      const length = varint();
      fields.push([field, message.subarray(at, (at += length))]);
    } else throw new Error(`wire type ${wireType}`);
  }
  return fields;
}

export interface DecodedEvent {
  wallTime: number;
  step: number;
  fileVersion?: string;
  scalars?: [string, number][];
}

/** Event{wall_time = 1, step = 2, file_version = 3, summary = 5 {value = 1 {tag = 1, simple_value = 2}}}. */
function decodeEvent(data: Buffer): DecodedEvent {
  const event: DecodedEvent = { wallTime: NaN, step: 0 };
  for (const [field, value] of protoFields(data)) {
    if (field === 1) event.wallTime = (value as Buffer).readDoubleLE(0);
    else if (field === 2) event.step = value as number;
    else if (field === 3) event.fileVersion = (value as Buffer).toString('utf8');
    else if (field === 5)
      event.scalars = protoFields(value as Buffer).map(([, summaryValue]) => {
        const parts = new Map(protoFields(summaryValue as Buffer));
        return [(parts.get(1) as Buffer).toString('utf8'), (parts.get(2) as Buffer).readFloatLE(0)];
      });
    else throw new Error(`unexpected Event field ${field}`);
  }
  return event;
}

/** Every events file of a run folder, in name order (TensorBoard's), decoded. */
export function eventFiles(runDirectory: string): { name: string; events: DecodedEvent[] }[] {
  const folder = join(runDirectory, 'tensorboard');
  return readdirSync(folder)
    .filter((name) => name.includes('tfevents'))
    .sort()
    .map((name) => ({ name, events: tfRecords(readFileSync(join(folder, name))).map(decodeEvent) }));
}

/** [step, tag, value] of every scalar across the files, file by file, as TensorBoard would read them. */
export function scalarsOf(runDirectory: string): [number, string, number][] {
  return eventFiles(runDirectory).flatMap(({ events }) =>
    events.flatMap((event) => (event.scalars ?? []).map(([tag, value]) => [event.step, tag, value] as const)),
  ) as [number, string, number][];
}

/** [step, tag, value as float32] of every numeric field of metrics.jsonl, in order. */
export function metricsScalars(runDirectory: string): [number, string, number][] {
  return readFileSync(join(runDirectory, 'metrics.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .flatMap((line) => {
      const { step, ...fields } = JSON.parse(line) as Record<string, unknown>;
      return Object.entries(fields)
        .filter(([, value]) => typeof value === 'number')
        .map(([tag, value]) => [step as number, tag, Math.fround(value as number)] as [number, string, number]);
    });
}
