/**
 * TensorBoard event files for `logging.reportTo: ['tensorboard']`: the numeric fields of every
 * metrics.jsonl record, written as scalars to `<run>/tensorboard/events.out.tfevents.<seconds>.<host>`
 * (docs/run-folder.md). A small encoder of the three formats involved, so no TensorFlow, protobuf
 * runtime or native module is needed:
 * - TFRecord framing: uint64 length (little-endian), masked CRC-32C of those 8 bytes, the data,
 *   masked CRC-32C of the data (tensorflow/core/lib/io/record_writer.cc);
 * - the protobuf messages `Event{wall_time = 1 (double), step = 2 (int64), file_version = 3,
 *   summary = 5}` and `Summary{value = 1: Value{tag = 1, simple_value = 2 (float)}}`
 *   (tensorboard/compat/proto/event.proto, summary.proto);
 * - CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), masked as TensorFlow does:
 *   ((crc >>> 15) | (crc << 17)) + 0xA282EAD8.
 * Each writing session (a run, then each resume) writes its own file, first an Event with
 * `file_version: "brain.Event:2"`, then one Event per record. Resume consistency follows the
 * metrics.jsonl rule: a checkpoint records every events file's length, and a resume cuts the files
 * back to those lengths and removes newer ones, so no step after the checkpoint is shown twice;
 * when a checkpoint recorded none (reporting was off then), the files are rebuilt from metrics.jsonl.
 *
 * Is not: a general TensorBoard writer (no histograms, images, text or graphs), a reader (the tests
 * carry their own decoder), or where records come from (run-folder.ts calls this).
 */
import { appendFileSync, existsSync, readdirSync, statSync, truncateSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import {
  makeDirectory,
  removeTree,
  renamePath,
  syncDirectory,
  syncFile,
  writeFileDurably,
} from '../model/durable-files.js';

/** An events file's name as written here; trainer-state.json's `tensorboardBytes` keys must match it. */
export const EVENTS_FILE_NAME = /^events\.out\.tfevents\.(\d+)\.[\w.-]+$/;

/** CRC-32C lookup table (Castagnoli polynomial, bit-reflected). */
const CRC32C_TABLE = (() => {
  const table = new Uint32Array(256);
  for (let byte = 0; byte < 256; byte++) {
    let crc = byte;
    for (let bit = 0; bit < 8; bit++) crc = crc & 1 ? (crc >>> 1) ^ 0x82f63b78 : crc >>> 1;
    table[byte] = crc >>> 0;
  }
  return table;
})();

/** TFRecord's masked CRC-32C of `bytes`; masking keeps a CRC of data holding CRCs from being trivial. */
function maskedCrc32c(bytes: Uint8Array): number {
  let crc = 0xffffffff;
  for (const byte of bytes) crc = CRC32C_TABLE[(crc ^ byte) & 0xff] ^ (crc >>> 8);
  crc = (crc ^ 0xffffffff) >>> 0;
  return ((((crc >>> 15) | (crc << 17)) >>> 0) + 0xa282ead8) >>> 0;
}

/** Appends protobuf wire-format fields to a growing byte list. */
class ProtoWriter {
  private readonly bytes: number[] = [];

  /** A base-128 varint; `value` is a whole number from 0 to 2^53 − 1 (steps, lengths, keys). */
  private varint(value: number): void {
    let rest = value;
    while (rest >= 0x80) {
      this.bytes.push((rest % 0x80) | 0x80);
      rest = Math.floor(rest / 0x80);
    }
    this.bytes.push(rest);
  }

  /** Field key: number << 3 | wire type (0 varint, 1 fixed64, 2 length-delimited, 5 fixed32). */
  private key(field: number, wireType: 0 | 1 | 2 | 5): void {
    this.varint(field * 8 + wireType);
  }

  uint(field: number, value: number): this {
    this.key(field, 0);
    this.varint(value);
    return this;
  }

  double(field: number, value: number): this {
    const view = new DataView(new ArrayBuffer(8));
    view.setFloat64(0, value, true);
    this.key(field, 1);
    this.bytes.push(...new Uint8Array(view.buffer));
    return this;
  }

  float(field: number, value: number): this {
    const view = new DataView(new ArrayBuffer(4));
    view.setFloat32(0, value, true);
    this.key(field, 5);
    this.bytes.push(...new Uint8Array(view.buffer));
    return this;
  }

  bytesField(field: number, value: Uint8Array): this {
    this.key(field, 2);
    this.varint(value.length);
    this.bytes.push(...value);
    return this;
  }

  string(field: number, value: string): this {
    return this.bytesField(field, new TextEncoder().encode(value));
  }

  finish(): Uint8Array {
    return Uint8Array.from(this.bytes);
  }
}

/** One TFRecord: length, its masked CRC, the data, the data's masked CRC. */
function frameRecord(data: Uint8Array): Buffer {
  const record = Buffer.alloc(8 + 4 + data.length + 4);
  record.writeBigUInt64LE(BigInt(data.length), 0);
  record.writeUInt32LE(maskedCrc32c(record.subarray(0, 8)), 8);
  record.set(data, 12);
  record.writeUInt32LE(maskedCrc32c(data), 12 + data.length);
  return record;
}

/** The first record of every events file: the format version TensorBoard checks. */
function versionRecord(wallTime: number): Buffer {
  return frameRecord(new ProtoWriter().double(1, wallTime).string(3, 'brain.Event:2').finish());
}

/**
 * A metrics record as one Event: its `step`, and a scalar per field whose value is a finite number
 * (strings such as `phase`, and the nulls metrics.jsonl writes for NaN, are left out). Null when
 * nothing is left.
 */
function metricsRecord(record: Record<string, unknown>, wallTime: number): Buffer | null {
  const summary = new ProtoWriter();
  let scalars = 0;
  for (const [tag, value] of Object.entries(record)) {
    if (tag === 'step' || typeof value !== 'number' || !Number.isFinite(value)) continue;
    summary.bytesField(1, new ProtoWriter().string(1, tag).float(2, value).finish());
    scalars++;
  }
  if (scalars === 0) return null;
  const event = new ProtoWriter().double(1, wallTime);
  const step = record.step;
  if (typeof step === 'number' && Number.isSafeInteger(step) && step > 0) event.uint(2, step);
  return frameRecord(event.bytesField(5, summary.finish()).finish());
}

const nowInSeconds = (): number => Date.now() / 1000;

/** The run folder's `tensorboard/` folder: this session's events file, and cutting back on resume. */
export class TensorBoardEvents {
  /** This session's file, created with its first record. */
  private file: string | null = null;

  constructor(readonly directory: string) {}

  /** The events files present, oldest first (the order TensorBoard reads them in). */
  files(): string[] {
    if (!existsSync(this.directory)) return [];
    return readdirSync(this.directory)
      .filter((name) => EVENTS_FILE_NAME.test(name))
      .sort((a, b) => fileSeconds(a) - fileSeconds(b) || a.localeCompare(b));
  }

  /** Appends one metrics record (as metrics.jsonl has it) to this session's file. */
  append(record: Record<string, unknown>): void {
    const wallTime = nowInSeconds();
    const encoded = metricsRecord(record, wallTime);
    if (encoded === null) return;
    this.file ??= this.newFile(versionRecord(wallTime));
    appendFileSync(this.file, encoded);
  }

  /** Fsyncs this session's file and the folder; returns every events file's length (for trainer-state.json). */
  sync(): Record<string, number> {
    if (this.file !== null) {
      syncFile(this.file);
      syncDirectory(this.directory);
    }
    return Object.fromEntries(this.files().map((name) => [name, statSync(join(this.directory, name)).size]));
  }

  /**
   * Cuts the events back to a checkpoint: each file it recorded to its recorded length, and every
   * other file removed. Without recorded lengths (the checkpoint was taken while reporting was off,
   * or by an older version), or when a file is shorter than recorded, the files are rebuilt from
   * `records` (metrics.jsonl as cut back) instead, when reporting now or when event files exist.
   */
  cutBack(lengths: Record<string, number> | undefined, records: () => Record<string, unknown>[], reporting: boolean) {
    const present = this.files();
    const size = (name: string) => statSync(join(this.directory, name)).size;
    const recorded = lengths ?? {};
    const intact = Object.entries(recorded).every(([name, bytes]) => present.includes(name) && size(name) >= bytes);
    if (lengths !== undefined && intact) {
      for (const name of present) {
        if (!(name in recorded)) removeTree(join(this.directory, name));
        else if (size(name) > recorded[name]) truncateSync(join(this.directory, name), recorded[name]);
      }
      if (present.length > 0) syncDirectory(this.directory);
    } else if (reporting || present.length > 0) this.rebuild(records());
  }

  /**
   * Replaces every events file by one holding `records` (wall time: now, since metrics.jsonl keeps
   * none). It is written under a temporary name first and renamed in before the old files go, so a
   * kill leaves the old files, or the new one beside them, never a half file under an events name.
   */
  rebuild(records: Record<string, unknown>[]): void {
    const old = this.files();
    const encoded = records.map((record) => metricsRecord(record, nowInSeconds())).filter((record) => !!record);
    if (encoded.length > 0) this.newFile(Buffer.concat([versionRecord(nowInSeconds()), ...encoded]));
    for (const name of old) removeTree(join(this.directory, name));
    if (old.length > 0) syncDirectory(this.directory);
  }

  /** Removes temporary files a killed rebuild left; one note per removal. */
  tidy(): string[] {
    if (!existsSync(this.directory)) return [];
    const leftovers = readdirSync(this.directory).filter((name) => /\.tmp-\d+$/.test(name));
    for (const name of leftovers) removeTree(join(this.directory, name));
    return leftovers.map((name) => `removed tensorboard/${name}`);
  }

  /**
   * Publishes a new events file holding `contents` and returns its path. Its name's seconds are
   * past every existing file's, so TensorBoard, which reads a run's files in name order, reads it last.
   */
  private newFile(contents: Buffer): string {
    if (!existsSync(this.directory)) makeDirectory(this.directory);
    const seconds = Math.max(Math.floor(nowInSeconds()), ...this.files().map((name) => fileSeconds(name) + 1));
    const host = hostname().replace(/[^\w.-]/g, '_') || 'localhost';
    const file = join(this.directory, `events.out.tfevents.${seconds}.${host}`);
    const temporary = join(this.directory, `.events.tmp-${process.pid}`);
    writeFileDurably(temporary, contents);
    renamePath(temporary, file);
    syncDirectory(this.directory);
    return file;
  }
}

/** The <seconds> of an events file's name. */
const fileSeconds = (name: string): number => Number(EVENTS_FILE_NAME.exec(name)![1]);
