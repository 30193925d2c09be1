/**
 * `logging.reportTo: ['tensorboard']`, end to end: the event files a short `grpo train` run writes
 * are read back with a decoder written here, independent of the writer (TFRecord framing with both
 * CRC-32Cs checked, then the Event and Summary protobuf fields), and must hold exactly the numeric
 * fields of metrics.jsonl: same steps, tags and values (as float32), in order. After a crash past a
 * checkpoint and a resume, the steps the resume replays appear once; a run that reported nothing
 * before its resume gets its whole history rebuilt. Unknown targets and wandb are refused naming
 * the field. Not here: TensorBoard's own reader (neither tensorboard nor tensorflow is installed).
 */
import { copyFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createRunContext, resolveConfig, RunFolder, train } from '../trainer/index.js';
import { runTrainCommand } from './train-command.js';

const scratch = mkdtempSync(join(tmpdir(), 'grpo-report-to-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

// ---- an independent decoder --------------------------------------------------------------------

/** CRC-32C computed bit by bit (no table), so it shares nothing with the writer's. */
function crc32c(bytes: Uint8Array): number {
  let crc = ~0;
  for (const byte of bytes) {
    crc ^= byte;
    for (let bit = 0; bit < 8; bit++) crc = crc & 1 ? (crc >>> 1) ^ 0x82f63b78 : crc >>> 1;
  }
  return ~crc >>> 0;
}
const masked = (crc: number): number => (((crc >>> 15) | (crc << 17)) + 0xa282ead8) >>> 0;

/** The records of a TFRecord file; throws on a bad length CRC, data CRC or a cut record. */
function tfRecords(file: Buffer): Buffer[] {
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

interface DecodedEvent {
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
function eventFiles(runDirectory: string): { name: string; events: DecodedEvent[] }[] {
  const folder = join(runDirectory, 'tensorboard');
  return readdirSync(folder)
    .filter((name) => name.includes('tfevents'))
    .sort()
    .map((name) => ({ name, events: tfRecords(readFileSync(join(folder, name))).map(decodeEvent) }));
}

/** [step, tag, value] of every scalar across the files, file by file, as TensorBoard would read them. */
function scalarsOf(runDirectory: string): [number, string, number][] {
  return eventFiles(runDirectory).flatMap(({ events }) =>
    events.flatMap((event) => (event.scalars ?? []).map(([tag, value]) => [event.step, tag, value] as const)),
  ) as [number, string, number][];
}

/** [step, tag, value as float32] of every numeric field of metrics.jsonl, in order. */
function metricsScalars(runDirectory: string): [number, string, number][] {
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

// ---- tests -------------------------------------------------------------------------------------

const small = [
  'model.hiddenSize=16',
  'model.numLayers=1',
  'model.numHeads=2',
  'sft.steps=2',
  'sft.batchSize=4',
  'grpo.steps=3',
  'grpo.promptsPerStep=2',
  'grpo.microBatchSize=4',
  'sampling.groupSize=2',
  'sampling.maxNewTokens=4',
  'evaluation.examples=4',
  'evaluation.every=2',
  'checkpoint.every=0',
  `logging.runsDirectory=${JSON.stringify(scratch)}`,
  'logging.reportTo=["tensorboard"]',
];

describe('the decoder', () => {
  it('computes the CRC-32C test vector', () => {
    expect(crc32c(Buffer.from('123456789'))).toBe(0xe3069283);
  });
});

describe("logging.reportTo ['tensorboard']", () => {
  const run = join(scratch, 'tb');
  it('writes one events file holding exactly metrics.jsonl’s numbers (SFT, GRPO and evaluations)', async () => {
    const started = Date.now() / 1000;
    expect(await runTrainCommand({ set: small, runName: 'tb', quiet: true })).toBe(0);
    const files = eventFiles(run);
    expect(files).toHaveLength(1);
    expect(files[0].name).toMatch(/^events\.out\.tfevents\.\d{10}\.[\w.-]+$/);
    const [version, ...records] = files[0].events;
    expect(version.fileVersion).toBe('brain.Event:2');
    for (const event of files[0].events) {
      expect(event.wallTime).toBeGreaterThanOrEqual(Math.floor(started));
      expect(event.wallTime).toBeLessThanOrEqual(Date.now() / 1000);
    }
    expect(records.every((event) => event.scalars && event.scalars.length > 0)).toBe(true);

    const expected = metricsScalars(run);
    expect(scalarsOf(run)).toEqual(expected);
    // The run logged all three kinds of record, so all three are compared.
    const tags = new Set(expected.map(([, tag]) => tag));
    for (const tag of ['loss/sft', 'reward/mean', 'eval/accuracy']) expect(tags).toContain(tag);
    expect(new Set(expected.map(([step]) => step)).size).toBeGreaterThanOrEqual(5);
  }, 120_000);

  it('the decoder refuses a flipped byte and a cut record, so the comparison checks the framing', () => {
    const [{ name }] = eventFiles(run);
    const bytes = readFileSync(join(run, 'tensorboard', name));
    const check = (damaged: Buffer) => () => tfRecords(damaged);
    const flipped = (at: number) => {
      const copy = Buffer.from(bytes);
      copy[at] ^= 1;
      return copy;
    };
    expect(check(flipped(0))).toThrow(/length CRC wrong/);
    expect(check(flipped(9))).toThrow(/length CRC wrong/);
    expect(check(flipped(20))).toThrow(/data CRC wrong/);
    expect(check(flipped(bytes.length - 1))).toThrow(/data CRC wrong/);
    expect(check(bytes.subarray(0, bytes.length - 3))).toThrow(/cut/);
  });

  it('refuses unknown targets and wandb naming the field, before any compute', () => {
    expect(() => resolveConfig({ logging: { reportTo: ['tensorbord'] } })).toThrow(
      '- logging.reportTo: unknown target "tensorbord"; known: tensorboard',
    );
    expect(() => resolveConfig({ logging: { reportTo: ['wandb'] } })).toThrow(
      /- logging\.reportTo: wandb's JavaScript SDK .* `wandb sync runs\/<run>\/tensorboard`; known: tensorboard/,
    );
  });
});

describe('resume', () => {
  const config = (reportTo: string[]) =>
    resolveConfig({
      model: { hiddenSize: 16, numLayers: 1, numHeads: 2 },
      sft: { steps: 2, batchSize: 4 },
      grpo: { steps: 4, promptsPerStep: 2, microBatchSize: 4 },
      sampling: { groupSize: 2, maxNewTokens: 4 },
      evaluation: { examples: 4 },
      checkpoint: { every: 2, keepLast: 2 },
      logging: { reportTo },
    });
  /** Trains (or resumes) until the record of step 5 is logged, then fails as a crash would (checkpoint step-4 stays). */
  const crashAfterStep5 = async (runDirectory: string, reportTo: string[], resume = false) =>
    expect(
      train(createRunContext(config(reportTo)), {
        runDirectory,
        quiet: true,
        resume,
        onStep: (record) => {
          if (record.step === 5) throw new Error('crash');
        },
      }),
    ).rejects.toThrow('crash');
  const rewardsAtStep5 = (runDirectory: string) =>
    scalarsOf(runDirectory).filter(([step, tag]) => step === 5 && tag === 'reward/mean');

  it('after crashes past a checkpoint, the replayed steps appear once: the events files are cut back with metrics.jsonl', async () => {
    const runDirectory = join(scratch, 'crashed');
    await crashAfterStep5(runDirectory, ['tensorboard']);
    expect(rewardsAtStep5(runDirectory)).toHaveLength(1); // the crashed session wrote past step-4
    expect(scalarsOf(runDirectory)).toEqual(metricsScalars(runDirectory));
    // Resumed from step-4 and crashed again at 5: its file, newer than the checkpoint, must go too.
    await crashAfterStep5(runDirectory, ['tensorboard'], true);
    expect(eventFiles(runDirectory)).toHaveLength(2);
    expect(rewardsAtStep5(runDirectory)).toHaveLength(1);

    await train(createRunContext(config(['tensorboard'])), { runDirectory, quiet: true, resume: true });
    const after = scalarsOf(runDirectory);
    expect(after).toEqual(metricsScalars(runDirectory));
    expect(rewardsAtStep5(runDirectory)).toHaveLength(1);
    const files = eventFiles(runDirectory);
    expect(files).toHaveLength(2); // the first session's, cut back to step-4, and the last session's
    expect(files[0].events.at(-1)!.step).toBeLessThanOrEqual(4);
    expect(files[1].events[1].step).toBe(5);
  }, 120_000);

  it('a run that reported nothing before its resume gets its whole history rebuilt from metrics.jsonl', async () => {
    const runDirectory = join(scratch, 'enabled-on-resume');
    await crashAfterStep5(runDirectory, []);
    expect(readdirSync(runDirectory)).not.toContain('tensorboard');
    await train(createRunContext(config(['tensorboard'])), { runDirectory, quiet: true, resume: true });
    const after = scalarsOf(runDirectory);
    expect(after).toEqual(metricsScalars(runDirectory));
    expect(after.filter(([step]) => step === 1).length).toBeGreaterThan(0); // steps from before the resume too
  }, 120_000);

  it('a checkpoint whose tensorboardBytes names a path outside tensorboard/ counts as damaged', () => {
    const runDirectory = join(scratch, 'crashed');
    const stateFile = join(runDirectory, 'checkpoints', 'step-6', 'trainer-state.json');
    const state = JSON.parse(readFileSync(stateFile, 'utf8')) as Record<string, unknown>;
    expect(Object.keys(state.tensorboardBytes as object)).toHaveLength(2);
    expect(new RunFolder(runDirectory).checkpointProblem(6)).toBeNull();
    writeFileSync(stateFile, JSON.stringify({ ...state, tensorboardBytes: { '../metrics.jsonl': 0 } }));
    expect(new RunFolder(runDirectory).checkpointProblem(6)).toMatch(/tensorboardBytes.*must be an events file name/);
  });
});
